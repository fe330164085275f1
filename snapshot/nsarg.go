package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
)

// ErrAmbiguousNamespace is matched by NSArg.Resolve's refusal of an
// argument with two readings that the store does not settle: the argument
// must change (a usage mistake).
var ErrAmbiguousNamespace = errors.New("ambiguous namespace argument")

// ambiguousError is a refusal of NSArg.Resolve: it says only its message
// and matches ErrAmbiguousNamespace.
type ambiguousError string

// Error returns the message.
func (e ambiguousError) Error() string { return string(e) }

// Is matches ErrAmbiguousNamespace.
func (e ambiguousError) Is(target error) bool { return target == ErrAmbiguousNamespace }

// NSArg is what a namespace argument (--ns) can mean. Its grammar is the
// one PBS, proxmox-backup-client and 'pbsdirect namespaces' print: levels
// joined by '/' ("prod/db", a trailing '/' allowed). The datastore path
// form ("ns/prod/ns/db", as snapshot names print it) is a second reading of
// any argument whose even-index levels are all "ns"; since "ns" is a valid
// level name, "ns/prod" reads both as namespace ns → prod (plain) and as
// the path of namespace prod (path). The plain reading is the grammar:
// Resolve takes it whenever it exists, and refuses the argument when only
// the path reading does.
type NSArg struct {
	arg   string          // as given, without a trailing '/'
	plain index.Namespace // the plain reading; nil when not a valid namespace
	path  index.Namespace // the path-form reading; nil when arg is not of that form
}

// ParseNSArg parses a namespace argument ("" is the root namespace). When
// no reading is a valid namespace it returns the error of the plain
// reading (index.ParseNamespace's).
func ParseNSArg(s string) (NSArg, error) {
	a := NSArg{arg: strings.TrimSuffix(s, "/")}
	plain, perr := index.ParseNamespace(a.arg)
	if perr == nil {
		a.plain = plain
	}
	if path, ok := pathForm(a.arg); ok {
		a.path = path
	}
	if a.plain == nil && a.path == nil {
		return a, perr
	}
	return a, nil
}

// pathForm reads s as a datastore path "ns/a/ns/b": an even number of
// levels, every even-index one "ns", the others a valid namespace. ok is
// false for anything else.
func pathForm(s string) (index.Namespace, bool) {
	if s == "" {
		return nil, false
	}
	parts := strings.Split(s, "/")
	if len(parts)%2 != 0 {
		return nil, false
	}
	levels := make(index.Namespace, 0, len(parts)/2)
	for i := 0; i < len(parts); i += 2 {
		if parts[i] != "ns" {
			return nil, false
		}
		levels = append(levels, parts[i+1])
	}
	if levels.Validate() != nil {
		return nil, false
	}
	return levels, true
}

// Ambiguous reports whether both readings are valid and differ.
func (a NSArg) Ambiguous() bool { return a.plain != nil && a.path != nil }

// only returns the namespace of an argument with a single reading; ok is
// false for an ambiguous one.
func (a NSArg) only() (index.Namespace, bool) {
	switch {
	case a.Ambiguous():
		return nil, false
	case a.plain != nil:
		return a.plain, true
	default:
		return a.path, true
	}
}

// Resolve returns the namespace the argument means in store. An argument
// with one reading is that namespace, whatever the store holds. An
// argument with both ("ns/prod") is its plain reading (as listed) when that
// namespace exists, even when the path reading exists too, and when
// neither exists (a reading command then reports it missing; backup,
// create true, creates it with its parents). When only the path reading
// exists it is refused: the path form is never taken silently for a name
// that can be pasted from a listing. create is kept for the refusal's
// hint.
//
// A refusal matches ErrAmbiguousNamespace (a usage mistake: the argument
// must change) and names both readings and how to write the existing one.
// Store errors are returned as they are.
func (a NSArg) Resolve(ctx context.Context, store chunkstore.Store, create bool) (index.Namespace, error) {
	if ns, ok := a.only(); ok {
		return ns, nil
	}
	plainOK, err := nsExists(ctx, store, a.plain)
	if err != nil || plainOK {
		return a.plain, err
	}
	pathOK, err := nsExists(ctx, store, a.path)
	if err != nil {
		return nil, err
	}
	if !pathOK {
		return a.plain, nil
	}
	return nil, a.refusal(create)
}

// refusal is the ErrAmbiguousNamespace error for an argument whose plain
// reading does not exist while its path reading does: it names both
// readings and how to write each.
func (a NSArg) refusal(create bool) error {
	hint := "write " + index.DisplayText(a.path.String()) + " for namespace " + index.DisplayText(a.path.String())
	if create {
		hint += "; to back up into a new namespace " + index.DisplayText(a.plain.String()) + ", create it first (proxmox-backup-client namespace create)"
	}
	return ambiguousError(fmt.Sprintf("--ns %s is ambiguous: there is no namespace %s (as 'pbsdirect namespaces' prints it), but the datastore path form reads as namespace %s, which exists; the path form is not taken for a listed name (%s)",
		index.DisplayText(a.arg), index.DisplayText(a.plain.String()), index.DisplayText(a.path.String()), hint))
}

// nsExists reports whether namespace ns holds anything in store.
func nsExists(ctx context.Context, store chunkstore.Store, ns index.Namespace) (bool, error) {
	err := Exists(ctx, store, ns)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNoNamespace):
		return false, nil
	}
	return false, err
}
