// Package backup writes PBS-format snapshots of image files into a Store:
// the image is cut into fixed-size chunks, each encoded as a DataBlob
// (zstd level 1 kept only when smaller, optionally AES-256-GCM encrypted,
// §2.4), uploaded once per digest, then the fixed index (§3) and finally the
// signed manifest (§6) are written, as proxmox-backup-client would. A
// directory is encoded as a pxar archive (package pxar) while it is read,
// its stream(s) cut by the content-defined Chunker into a dynamic index
// (§4) each, uploaded the same way.
//
// Where things go: backups write to a chunkstore.WriteStore, so a new
// writable backend needs nothing here; a new source kind (another image
// format, a file archive) is a new Source reader feeding the same chunker.
package backup
