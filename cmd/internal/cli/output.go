package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Output formats, as proxmox-backup-client names them.
const (
	FormatText       = "text"
	FormatJSON       = "json"        // one line
	FormatJSONPretty = "json-pretty" // indented by two spaces
)

// DefaultFormat is PROXMOX_OUTPUT_FORMAT, else text.
func DefaultFormat() string {
	if f := os.Getenv("PROXMOX_OUTPUT_FORMAT"); f != "" {
		return f
	}
	return FormatText
}

// CheckFormat refuses an unknown --output-format (usage error).
func CheckFormat(f string) error {
	switch f {
	case FormatText, FormatJSON, FormatJSONPretty:
		return nil
	}
	return Usagef("--output-format must be text, json or json-pretty, not %q", f)
}

// FormatOf returns the output format a command line asks for: the last
// --output-format value before "--", else PROXMOX_OUTPUT_FORMAT, else text.
// An unknown value counts as text (the command refuses it).
func FormatOf(args []string) string {
	f := DefaultFormat()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--output-format="); ok {
			f = v
		} else if a == "--output-format" && i+1 < len(args) {
			f = args[i+1]
			i++
		}
	}
	if CheckFormat(f) != nil {
		return FormatText
	}
	return f
}

// Output is the stdout Run gives a command. Text goes straight through; in
// a JSON format, the command's result (WriteJSON) is held and printed once
// by Finish, with "ok", "exit-code" and, on failure, "error" added, so that
// every command prints exactly one JSON result, success or failure.
type Output struct {
	w      io.Writer
	format string
	result []byte // the command's JSON result, compact; nil until WriteJSON
	werr   error  // the first error writing to the real stdout
}

// NewOutput returns the Output of a command writing to w in format (one of
// FormatText, FormatJSON, FormatJSONPretty).
func NewOutput(w io.Writer, format string) *Output { return &Output{w: w, format: format} }

// Err returns the first error writing to the real stdout, or nil.
func (o *Output) Err() error { return o.werr }

// Write passes text through to the real stdout, remembering the first
// error (Run does not report success for output that was not written).
func (o *Output) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil && o.werr == nil {
		o.werr = err
	}
	return n, err
}

// TextOnly marks Run's stdout w as carrying a command's own text (a paper
// key): no JSON result is added to it, whatever PROXMOX_OUTPUT_FORMAT says.
func TextOnly(w io.Writer) {
	if o, ok := w.(*Output); ok {
		o.format = FormatText
	}
}

// IsJSON reports whether w is Run's stdout in a JSON format.
func IsJSON(w io.Writer) bool {
	o, ok := w.(*Output)
	return ok && o.format != FormatText
}

// HasJSONResult reports whether w is Run's stdout in a JSON format holding
// a result given by WriteJSON.
func HasJSONResult(w io.Writer) bool {
	o, ok := w.(*Output)
	return ok && o.format != FormatText && o.result != nil
}

// WriteJSON gives v as the command's JSON result. Through Run's Output in
// a JSON format it is held for Finish; elsewhere it is printed indented.
// It returns v's encoding error or w's write error.
func WriteJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	js := escapeC1(bytes.TrimRight(b.Bytes(), "\n"))
	if o, ok := w.(*Output); ok && o.format != FormatText {
		o.result = js
		return nil
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, js, "", "  "); err != nil {
		return err
	}
	ind.WriteByte('\n')
	_, err := w.Write(ind.Bytes())
	return err
}

// Finish prints the JSON result of a command that exited with code (errMsg
// is its error, "" on success): the held result object with "ok",
// "exit-code" and "error" first (replacing fields of the same names), a held
// array as it is on success, or an object of those fields alone.
// It returns the error writing it.
func (o *Output) Finish(code int, errMsg string) error {
	if o.format == FormatText {
		return nil
	}
	env := []field{{"ok", mustJSON(code == 0)}, {"exit-code", mustJSON(code)}}
	if errMsg != "" {
		env = append(env, field{"error", mustJSON(errMsg)})
	}
	var out []byte
	switch fields, isObject := objectFields(o.result); {
	case isObject:
		out = encodeObject(append(env, dropFields(fields, env)...))
	case o.result != nil && code == 0:
		out = o.result
	case o.result != nil:
		out = encodeObject(append(env, field{"result", o.result}))
	default:
		out = encodeObject(env)
	}
	if o.format == FormatJSONPretty {
		var ind bytes.Buffer
		if err := json.Indent(&ind, out, "", "  "); err != nil {
			return err
		}
		out = ind.Bytes()
	}
	_, err := fmt.Fprintf(o, "%s\n", out)
	return err
}

// field is one member of a JSON object, in order.
type field struct {
	name  string
	value json.RawMessage
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return escapeC1(b)
}

// escapeC1 writes DEL and the C1 control characters (U+007F–U+009F; a
// terminal may take U+009B as CSI) of encoded JSON as \u escapes:
// encoding/json escapes only those below U+0020. They can only occur in
// strings, where the escape means the same character.
func escapeC1(js []byte) []byte {
	isC1 := func(r rune) bool { return r >= 0x7f && r <= 0x9f }
	if bytes.IndexFunc(js, isC1) < 0 {
		return js
	}
	out := make([]byte, 0, len(js)+16)
	for _, r := range string(js) {
		if isC1(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
			continue
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

// objectFields returns the members of the JSON object js in order, and
// whether js is an object.
func objectFields(js []byte) ([]field, bool) {
	if len(js) == 0 || js[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	var fields []field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		fields = append(fields, field{name, v})
	}
	return fields, true
}

// dropFields returns fields without the names in drop.
func dropFields(fields, drop []field) []field {
	var out []field
next:
	for _, f := range fields {
		for _, d := range drop {
			if f.name == d.name {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}

// encodeObject writes fields as one compact JSON object.
func encodeObject(fields []field) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(f.name))
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
