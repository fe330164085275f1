// Package pxartar writes a pxar archive as a POSIX tar stream (PAX
// format) that GNU tar and Proxmox VE (pct restore from a tar stream)
// read: entries in archive order, file contents streamed through a fixed
// buffer, numeric owners, mtimes with nanoseconds, extended attributes and
// file capabilities as SCHILY.xattr.* records, POSIX ACLs as
// SCHILY.acl.access / SCHILY.acl.default records (GNU tar --xattrs --acls).
package pxartar

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/pxar"
)

// File type bits of st_mode.
const (
	modeTypeMask = 0o170000
	modeBlock    = 0o060000
)

// Options says how Write writes the stream. The zero value is the default.
type Options struct {
	// Progress, when set, is called after each entry with the content
	// bytes written so far.
	Progress func(bytes int64)
}

// Report says what Write wrote. Entries counts the tar entries (the root
// "./" included); Files the regular files and Bytes their content bytes;
// Hardlinks the hardlink entries. Sockets counts the sockets left out (tar
// cannot store them; GNU tar leaves them out too); SkippedXattrs the
// extended attributes left out because their name cannot be a PAX record
// key (it holds '='). Written is the size of the tar stream in bytes.
type Report struct {
	Entries, Files, Hardlinks int64
	Bytes                     int64
	Sockets, SkippedXattrs    int64
	Written                   int64
}

// WriteError is an error writing to the output (not reading the archive):
// Path is the entry being written ("." for the root), Err the writer's
// error.
type WriteError struct {
	Path string
	Err  error
}

// Error names the entry (quoted: it comes from the archive).
func (e *WriteError) Error() string { return fmt.Sprintf("writing tar entry %q: %v", e.Path, e.Err) }

// Unwrap returns the writer's error.
func (e *WriteError) Unwrap() error { return e.Err }

// bufSize is the buffer through which file contents are copied.
const bufSize = 1 << 20

// countingWriter counts the bytes written to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Write writes archive a to w as a PAX tar stream, walking it in archive
// order (pxar.Archive.Walk), and returns what it wrote. Names are "./"
// and "./PATH" ("./DIR/" for directories), hardlinks point to their
// target's "./PATH" and carry the target's mode, owner and mtime.
// Entries an extractor must not follow are refused before anything of
// them is written, with an error matching pxar.ErrFormat: a second entry
// of one name in a directory (such as a directory named like an earlier
// symlink, which would lead what follows through it) and a hardlink whose
// target is not a regular file written earlier in the stream. Errors:
// ctx's error when cancelled; the archive's errors (*pxar.Error, matching
// pxar.ErrFormat when malformed or refused) as they are; *WriteError when
// w fails. On an error the stream is left without its end-of-archive
// blocks; what was written before stays written, and the report counts
// it. Memory use is bounded by one buffer, the names of the directories
// open in the walk and the paths of the regular files written (hardlink
// targets), whatever the files' sizes.
func Write(ctx context.Context, w io.Writer, a *pxar.Archive, o Options) (*Report, error) {
	cw := &countingWriter{w: w}
	tw := tar.NewWriter(cw)
	rep := &Report{}
	buf := make([]byte, bufSize)
	c := newChecker(a)
	err := a.Walk(func(e *pxar.Entry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		target, err := c.check(e)
		if err != nil {
			return err
		}
		err = writeEntry(ctx, tw, e, target, rep, buf)
		if o.Progress != nil {
			o.Progress(rep.Bytes)
		}
		return err
	})
	if err == nil {
		if err = tw.Close(); err != nil {
			err = &WriteError{Path: ".", Err: err}
		}
	}
	rep.Written = cw.n
	return rep, err
}

// tarName is the tar name of archive path p.
func tarName(p string, dir bool) string {
	if p == "." || p == "" {
		return "./"
	}
	if dir {
		return "./" + p + "/"
	}
	return "./" + p
}

// writeEntry writes one entry (a file's content too); target is a
// hardlink's target file.
func writeEntry(ctx context.Context, tw *tar.Writer, e, target *pxar.Entry, rep *Report, buf []byte) error {
	h := &tar.Header{
		Format:  tar.FormatPAX,
		Name:    tarName(e.Path, e.Kind == pxar.KindDir),
		Mode:    int64(e.Mode &^ modeTypeMask),
		Uid:     int(e.UID),
		Gid:     int(e.GID),
		ModTime: time.Unix(e.MTimeSec, int64(e.MTimeNsec)),
	}
	switch e.Kind {
	case pxar.KindDir:
		h.Typeflag = tar.TypeDir
	case pxar.KindFile:
		h.Typeflag = tar.TypeReg
		h.Size = int64(e.Size)
	case pxar.KindSymlink:
		h.Typeflag = tar.TypeSymlink
		h.Linkname = e.LinkTarget
	case pxar.KindHardlink:
		// The format keeps no metadata for a hardlink: the link entry
		// carries its target's (GNU tar ignores it, other extractors
		// apply it to the shared inode).
		h = &tar.Header{Format: tar.FormatPAX, Typeflag: tar.TypeLink, Name: tarName(e.Path, false),
			Linkname: tarName(e.LinkTarget, false), Mode: int64(target.Mode &^ modeTypeMask),
			Uid: int(target.UID), Gid: int(target.GID), ModTime: time.Unix(target.MTimeSec, int64(target.MTimeNsec))}
	case pxar.KindDevice:
		h.Typeflag = tar.TypeChar
		if e.Mode&modeTypeMask == modeBlock {
			h.Typeflag = tar.TypeBlock
		}
		h.Devmajor, h.Devminor = int64(e.Device.Major), int64(e.Device.Minor)
	case pxar.KindFIFO:
		h.Typeflag = tar.TypeFifo
	case pxar.KindSocket:
		rep.Sockets++
		return nil
	default:
		return &pxar.Error{Path: e.Path, Stream: pxar.StreamMeta, Offset: e.Offset(), Err: fmt.Errorf("%w: entry of unknown kind %d", pxar.ErrFormat, e.Kind)}
	}
	if e.Kind != pxar.KindHardlink {
		h.PAXRecords = paxRecords(e, rep)
	}
	if err := tw.WriteHeader(h); err != nil {
		return &WriteError{Path: e.Path, Err: err}
	}
	rep.Entries++
	switch e.Kind {
	case pxar.KindHardlink:
		rep.Hardlinks++
	case pxar.KindFile:
		rep.Files++
		f, err := e.Open()
		if err != nil {
			return err
		}
		return copyContent(ctx, tw, f, e.Path, rep, buf)
	}
	return nil
}

// copyContent copies a file's content into the tar entry through buf.
func copyContent(ctx context.Context, tw *tar.Writer, f *pxar.File, p string, rep *Report, buf []byte) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := f.Read(buf)
		if n > 0 {
			if _, err := tw.Write(buf[:n]); err != nil {
				return &WriteError{Path: p, Err: err}
			}
			rep.Bytes += int64(n)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// paxRecords returns the entry's xattr, capability and ACL records.
func paxRecords(e *pxar.Entry, rep *Report) map[string]string {
	r := map[string]string{}
	for _, x := range e.Xattrs {
		name := string(x.Name)
		if name == "" || strings.ContainsAny(name, "=\x00") {
			rep.SkippedXattrs++
			continue
		}
		r["SCHILY.xattr."+name] = string(x.Value)
	}
	if e.FCaps != nil {
		r["SCHILY.xattr.security.capability"] = string(e.FCaps)
	}
	if s := AccessACL(e.Mode, &e.ACL); s != "" {
		r["SCHILY.acl.access"] = s
	}
	if s := DefaultACL(&e.ACL); s != "" {
		r["SCHILY.acl.default"] = s
	}
	if len(r) == 0 {
		return nil
	}
	return r
}

// perm writes permission bits (4 read, 2 write, 1 execute) as "rwx".
func perm(p uint64) string {
	b := []byte("---")
	if p&4 != 0 {
		b[0] = 'r'
	}
	if p&2 != 0 {
		b[1] = 'w'
	}
	if p&1 != 0 {
		b[2] = 'x'
	}
	return string(b)
}

// aclText writes ACL entries in the long text form GNU tar writes and
// reads (acl_to_text / acl_from_text): one entry a line, numeric ids.
func aclText(userObj, groupObj, other uint64, mask *uint64, users, groups []pxar.ACLEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "user::%s\n", perm(userObj))
	for _, u := range users {
		fmt.Fprintf(&b, "user:%d:%s\n", u.ID, perm(u.Permissions))
	}
	fmt.Fprintf(&b, "group::%s\n", perm(groupObj))
	for _, g := range groups {
		fmt.Fprintf(&b, "group:%d:%s\n", g.ID, perm(g.Permissions))
	}
	if mask != nil {
		fmt.Fprintf(&b, "mask::%s\n", perm(*mask))
	}
	fmt.Fprintf(&b, "other::%s\n", perm(other))
	return b.String()
}

// unionMask is the mask an ACL with named entries needs when it has none:
// the union of the group class's permissions (as setfacl computes it).
func unionMask(groupObj uint64, users, groups []pxar.ACLEntry) *uint64 {
	m := groupObj
	for _, u := range users {
		m |= u.Permissions
	}
	for _, g := range groups {
		m |= g.Permissions
	}
	m &= 7
	return &m
}

// AccessACL returns the SCHILY.acl.access text of an entry with st_mode
// mode and ACL acl, or "" when the ACL holds no more than the mode bits.
// With a mask, the mode's group bits are the mask and acl.GroupObj the
// owning group's permissions (as the kernel and pxar keep them).
func AccessACL(mode uint64, acl *pxar.ACL) string {
	if len(acl.Users) == 0 && len(acl.Groups) == 0 && acl.GroupObj == nil {
		return ""
	}
	groupBits := (mode >> 3) & 7
	groupObj, mask := groupBits, &groupBits
	if acl.GroupObj != nil {
		groupObj = *acl.GroupObj & 7
	}
	return aclText((mode>>6)&7, groupObj, mode&7, mask, acl.Users, acl.Groups)
}

// DefaultACL returns the SCHILY.acl.default text of a directory's ACL, or
// "" when it has no default ACL. A default ACL with named entries but no
// mask gets the union mask (an ACL with named entries needs one).
func DefaultACL(acl *pxar.ACL) string {
	if acl.Default == nil && len(acl.DefaultUsers) == 0 && len(acl.DefaultGroups) == 0 {
		return ""
	}
	d := pxar.ACLDefault{UserObj: 7, GroupObj: 5, Other: 5, Mask: pxar.ACLNoMask}
	if acl.Default != nil {
		d = *acl.Default
	}
	var mask *uint64
	if d.Mask != pxar.ACLNoMask {
		m := d.Mask & 7
		mask = &m
	} else if len(acl.DefaultUsers) > 0 || len(acl.DefaultGroups) > 0 {
		mask = unionMask(d.GroupObj, acl.DefaultUsers, acl.DefaultGroups)
	}
	return aclText(d.UserObj&7, d.GroupObj&7, d.Other&7, mask, acl.DefaultUsers, acl.DefaultGroups)
}

// IsWriteError reports whether err came from the output writer.
func IsWriteError(err error) bool {
	var we *WriteError
	return errors.As(err, &we)
}
