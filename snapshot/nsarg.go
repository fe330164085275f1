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

// NSArg is what a namespace argument (--ns) can mean. Its grammar is the one PBS,
// proxmox-backup-client and 'pbsdirect namespaces' print: levels joined by
// '/' ("prod/db", a trailing '/' allowed). The datastore path form
// ("ns/prod/ns/db", as snapshot names print it) is a second reading of any
// argument whose even-index levels are all "ns"; since "ns" is a valid
// level name, "ns/prod" reads both as namespace ns → prod (plain) and as
// the path of namespace prod (path). Resolve settles such an argument
// against the store.
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
// ambiguous one ("ns/prod") is settled by what the store holds:
//
//   - a command that reads (create false) takes the reading that exists; when
//     neither exists, the plain one (which the command then reports
//     missing); when both exist, it is refused;
//   - backup (create true) takes the plain reading when it exists (it writes
//     into the namespace exactly as listed) and is refused otherwise: it
//     would create a namespace the user may not mean.
//
// A refusal matches ErrAmbiguousNamespace (a usage mistake: the argument
// must change) and names both readings and how to write each one. Store
// errors are returned as they are.
func (a NSArg) Resolve(ctx context.Context, store chunkstore.Store, create bool) (index.Namespace, error) {
	if ns, ok := a.only(); ok {
		return ns, nil
	}
	plainOK, err := nsExists(ctx, store, a.plain)
	if err != nil {
		return nil, err
	}
	pathOK, err := nsExists(ctx, store, a.path)
	if err != nil {
		return nil, err
	}
	switch {
	case create && plainOK:
		return a.plain, nil
	case create:
	case plainOK && pathOK:
	case pathOK:
		return a.path, nil
	default:
		return a.plain, nil
	}
	return nil, a.refusal(plainOK, pathOK, create)
}

// refusal is the ErrAmbiguousNamespace error for an ambiguous argument the store did not
// settle: it names both readings, what the store holds and how to write
// each reading alone.
func (a NSArg) refusal(plainOK, pathOK, create bool) error {
	held := "the store holds neither"
	switch {
	case plainOK && pathOK:
		held = "the store holds both"
	case pathOK:
		held = "the store holds only namespace " + index.DisplayText(a.path.String())
	}
	var hints []string
	if alone, err := ParseNSArg(a.path.String()); err == nil && !alone.Ambiguous() {
		hints = append(hints, "write "+index.DisplayText(a.path.String())+" for namespace "+index.DisplayText(a.path.String()))
	}
	if create {
		hints = append(hints, "create namespace "+index.DisplayText(a.plain.String())+" first (proxmox-backup-client namespace create) to back up into it")
	} else {
		hints = append(hints, "write its datastore path "+index.DisplayText(a.plain.Path())+" for namespace "+index.DisplayText(a.plain.String()))
	}
	return ambiguousError(fmt.Sprintf("--ns %s is ambiguous: namespace %s (as 'pbsdirect namespaces' prints it) or the datastore path of namespace %s; %s (%s)",
		index.DisplayText(a.arg), index.DisplayText(a.plain.String()), index.DisplayText(a.path.String()), held, strings.Join(hints, "; ")))
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
