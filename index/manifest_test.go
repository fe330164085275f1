package index

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// §10.3: key = scrypt("test", salt "", N=65536, r=8, p=1, 32 bytes).
const (
	key103       = "28cdb1a3bef39396c3860e00d448fe7a0efd8244486ab6feb30457681d31597e"
	fp103        = "12:b9:b7:74:bb:3d:89:95:2b:97:cb:c2:82:f0:0c:14:2b:83:ba:7f:96:62:6a:a1:5a:44:9a:63:e8:91:fe:25"
	sig103       = "d7b446fb7db081662081d4b40fedd858a1d6307a5aff4ecff7d5bf4fd35679e9"
	canonical103 = `{"backup-id":"elsa","backup-time":1593179765,"backup-type":"host","files":[{"crypt-mode":"encrypt","csum":"0101010101010101010101010101010101010101010101010101010101010101","filename":"test1.img.fidx","size":200},{"crypt-mode":"none","csum":"0202020202020202020202020202020202020202020202020202020202020202","filename":"abc.blob","size":200}]}`
)

func config(t testing.TB, keyHex string) *crypto.Config {
	t.Helper()
	cc, err := crypto.NewConfig([32]byte(mustHex(t, keyHex)))
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func cfg103(t testing.TB) *crypto.Config {
	cc := config(t, key103)
	if cc.Fingerprint().String() != fp103 {
		t.Fatalf("fingerprint %s, want %s", cc.Fingerprint(), fp103)
	}
	return cc
}

func manifest103() *Manifest {
	return &Manifest{
		BackupType: "host", BackupID: "elsa", BackupTime: 1593179765,
		Files: []FileInfo{
			{Filename: "test1.img.fidx", CryptMode: CryptEncrypt, Size: 200, Csum: [32]byte(bytes.Repeat([]byte{1}, 32))},
			{Filename: "abc.blob", CryptMode: CryptNone, Size: 200, Csum: [32]byte(bytes.Repeat([]byte{2}, 32))},
		},
		Unprotected: map[string]json.RawMessage{"note": json.RawMessage(`"This is not protected by the signature."`)},
	}
}

func TestManifestVector(t *testing.T) {
	cc := cfg103(t)
	m := manifest103()
	if ParseTimeMust(t, "2020-06-26T13:56:05Z") != m.BackupTime {
		t.Fatal("time")
	}
	b, err := m.CanonicalSigned()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != canonical103 {
		t.Errorf("canonical\n got %s\nwant %s", b, canonical103)
	}
	sig, err := m.ComputeSignature(cc)
	if err != nil || hex.EncodeToString(sig[:]) != sig103 {
		t.Errorf("HMAC %x (%v), want %s", sig, err, sig103)
	}
	if err := m.Sign(cc); err != nil {
		t.Fatal(err)
	}
	if *m.Signature != sig103 || string(m.Unprotected["key-fingerprint"]) != `"`+fp103+`"` {
		t.Errorf("Sign: signature %s, fingerprint %s", *m.Signature, m.Unprotected["key-fingerprint"])
	}

	// Round trip through the pretty form, then check.
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	m2, err := ParseManifest(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantErr(t, m2.Check(cc), nil)
	out2, _ := m2.Marshal()
	if !bytes.Equal(out, out2) {
		t.Errorf("Marshal not stable:\n%s\n%s", out, out2)
	}
}

func ParseTimeMust(t testing.TB, s string) int64 {
	t.Helper()
	v, err := ParseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestManifestMarshalFormat(t *testing.T) {
	m := manifest103()
	m.Files = m.Files[1:]
	m.Unprotected["chunk_upload_stats"] = json.RawMessage(`{"size":12345678901234567890,"count":3, "compressed_size":1.5e3,"duplicates":0}`)
	m.Unprotected["empty"] = json.RawMessage(`{}`)
	m.Unprotected["list"] = json.RawMessage(`[]`)
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "backup-id": "elsa",
  "backup-time": 1593179765,
  "backup-type": "host",
  "files": [
    {
      "crypt-mode": "none",
      "csum": "0202020202020202020202020202020202020202020202020202020202020202",
      "filename": "abc.blob",
      "size": 200
    }
  ],
  "signature": null,
  "unprotected": {
    "chunk_upload_stats": {
      "compressed_size": 1.5e3,
      "count": 3,
      "duplicates": 0,
      "size": 12345678901234567890
    },
    "empty": {},
    "list": [],
    "note": "This is not protected by the signature."
  }
}`
	if string(out) != want {
		t.Errorf("Marshal:\n%s\nwant\n%s", out, want)
	}
	m.Unprotected["bad"] = json.RawMessage(`{`)
	_, err = m.Marshal()
	wantErr(t, err, ErrBadManifest)
}

func TestManifestCheck(t *testing.T) {
	cc := cfg103(t)
	other := config(t, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	signed := func() *Manifest { m := manifest103(); m.Sign(cc); return m }
	for _, c := range []struct {
		name string
		m    func() *Manifest
		cc   *crypto.Config
		want error
		msg  string
	}{
		{"signed ok", signed, cc, nil, ""},
		{"signed, tampered size", func() *Manifest { m := signed(); m.Files[1].Size++; return m }, cc, ErrBadSignature, "does not match the given key 12:b9:b7:74"},
		{"signed, tampered mode", func() *Manifest { m := signed(); m.Files[0].CryptMode = CryptNone; return m }, cc, ErrBadSignature, "signature does not match"},
		{"signed, reordered files", func() *Manifest { m := signed(); m.Files[0], m.Files[1] = m.Files[1], m.Files[0]; return m }, cc, ErrBadSignature, ""},
		{"signed, uppercase signature", func() *Manifest { m := signed(); s := strings.ToUpper(sig103); m.Signature = &s; return m }, cc, ErrBadSignature, ""},
		{"signed, unprotected edited", func() *Manifest { m := signed(); m.Unprotected["note"] = json.RawMessage(`"x"`); return m }, cc, nil, ""},
		{"wrong key", signed, other, ErrWrongKey, fp103 + ", the given key is 0e:ab:d4:46"},
		{"missing key", signed, nil, ErrMissingKey, fp103},
		{"unsigned with key", manifest103, cc, nil, ""},
		{"unsigned without key", manifest103, nil, nil, ""},
		{"signature but no fingerprint, no key", func() *Manifest { m := signed(); delete(m.Unprotected, "key-fingerprint"); return m }, nil, nil, ""},
		{"signature but no fingerprint, other key", func() *Manifest { m := signed(); delete(m.Unprotected, "key-fingerprint"); return m }, other, ErrBadSignature, ""},
		{"null fingerprint", func() *Manifest { m := signed(); m.Unprotected["key-fingerprint"] = json.RawMessage("null"); return m }, nil, nil, ""},
		{"bad fingerprint", func() *Manifest { m := signed(); m.Unprotected["key-fingerprint"] = json.RawMessage("42"); return m }, cc, ErrBadManifest, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := c.m()
			err := m.Check(c.cc)
			wantErr(t, err, c.want)
			if c.want != nil && !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err, c.msg)
			}
			// The recomputed HMAC would sign the tampered manifest: never
			// in a message (see TestSignatureOracle in cmd/pbsdirect).
			if c.cc != nil && err != nil {
				sig, _ := m.ComputeSignature(c.cc)
				if strings.Contains(err.Error(), hex.EncodeToString(sig[:8])) {
					t.Errorf("message %q holds the recomputed signature", err)
				}
			}
		})
	}
}

// A manifest as PBS writes it, with unknown fields at both levels and a
// missing crypt-mode, signed by the §10.3 key: unknown fields are tolerated
// and do not take part in the signature.
func TestParseManifestTolerant(t *testing.T) {
	cc := cfg103(t)
	js := `{
  "backup-id": "elsa",
  "backup-time": 1593179765,
  "backup-type": "host",
  "extra-top": {"x": [1, 2, null]},
  "files": [
    {"crypt-mode": "encrypt", "csum": "0101010101010101010101010101010101010101010101010101010101010101", "filename": "test1.img.fidx", "size": 200, "extra": true},
    {"csum": "0202020202020202020202020202020202020202020202020202020202020202", "filename": "abc.blob", "size": 200}
  ],
  "signature": "` + sig103 + `",
  "unprotected": {"key-fingerprint": "` + fp103 + `", "note": "x"}
}`
	m, err := ParseManifest([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if m.Files[1].CryptMode != CryptNone {
		t.Errorf("missing crypt-mode parsed as %q", m.Files[1].CryptMode)
	}
	wantErr(t, m.Check(cc), nil)
	if b, _ := m.CanonicalSigned(); string(b) != canonical103 {
		t.Errorf("canonical %s", b)
	}
	out, _ := m.Marshal()
	if bytes.Contains(out, []byte("extra")) {
		t.Errorf("unknown typed fields kept on rewrite:\n%s", out)
	}
	fi, err := m.File("abc.blob")
	if err != nil || fi.Size != 200 {
		t.Errorf("File: %+v %v", fi, err)
	}
	// No unprotected, no signature at all (pre-0.8 manifests).
	m, err = ParseManifest([]byte(`{"backup-type":"vm","backup-id":"1","backup-time":1,"files":[]}`))
	if err != nil || m.Signature != nil || len(m.Unprotected) != 0 {
		t.Fatalf("%+v %v", m, err)
	}
	wantErr(t, m.Check(cc), nil)
}

func TestParseManifestBad(t *testing.T) {
	const cs = `"0101010101010101010101010101010101010101010101010101010101010101"`
	file := `{"filename":"a.blob","size":1,"csum":` + cs + `}`
	mk := func(files string, extra string) string {
		return `{"backup-type":"vm","backup-id":"100","backup-time":1700000000,"files":[` + files + `]` + extra + `}`
	}
	for _, c := range []struct {
		name, js string
		want     error
	}{
		{"ok", mk(file, ""), nil},
		{"ok signature null", mk(file, `,"signature":null,"unprotected":null`), nil},
		{"not an object", `[1]`, ErrBadManifest},
		{"invalid JSON", `{"backup-type":`, ErrBadManifest},
		{"trailing data", mk(file, "") + "x", ErrBadManifest},
		{"invalid UTF-8", mk(`{"filename":"a\xff.blob","size":1,"csum":`+cs+`}`, ""), ErrBadManifest},
		{"missing backup-type", `{"backup-id":"100","backup-time":1,"files":[]}`, ErrBadManifest},
		{"backup-type wrong case key", `{"Backup-Type":"vm","backup-id":"100","backup-time":1,"files":[]}`, ErrBadManifest},
		{"bad backup-type", `{"backup-type":"VM","backup-id":"100","backup-time":1,"files":[]}`, ErrBadManifest},
		{"null backup-id", `{"backup-type":"vm","backup-id":null,"backup-time":1,"files":[]}`, ErrBadManifest},
		{"float backup-time", `{"backup-type":"vm","backup-id":"1","backup-time":1.5,"files":[]}`, ErrBadManifest},
		{"string backup-time", `{"backup-type":"vm","backup-id":"1","backup-time":"1","files":[]}`, ErrBadManifest},
		{"missing files", `{"backup-type":"vm","backup-id":"1","backup-time":1}`, ErrBadManifest},
		{"duplicate key", `{"backup-type":"vm","backup-type":"ct","backup-id":"1","backup-time":1,"files":[]}`, ErrBadManifest},
		{"file not object", mk(`"a.blob"`, ""), ErrBadManifest},
		{"file missing size", mk(`{"filename":"a.blob","csum":`+cs+`}`, ""), ErrBadManifest},
		{"negative size", mk(`{"filename":"a.blob","size":-1,"csum":`+cs+`}`, ""), ErrBadManifest},
		{"short csum", mk(`{"filename":"a.blob","size":1,"csum":"0101"}`, ""), ErrBadManifest},
		{"bad crypt-mode", mk(`{"filename":"a.blob","size":1,"csum":`+cs+`,"crypt-mode":"Encrypt"}`, ""), ErrBadManifest},
		{"null crypt-mode", mk(`{"filename":"a.blob","size":1,"csum":`+cs+`,"crypt-mode":null}`, ""), ErrBadManifest},
		{"path in filename", mk(`{"filename":"../x.blob","size":1,"csum":`+cs+`}`, ""), ErrBadName},
		{"signature not string", mk(file, `,"signature":5`), ErrBadManifest},
		{"unprotected not object", mk(file, `,"unprotected":[]`), ErrBadManifest},
		// What PBS never writes (issue: strict parsing of hostile stores).
		{"bad backup-id", `{"backup-type":"vm","backup-id":"../1","backup-time":1,"files":[]}`, ErrBadManifest},
		{"backup-time 0", `{"backup-type":"vm","backup-id":"1","backup-time":0,"files":[]}`, ErrBadManifest},
		{"backup-time negative", `{"backup-type":"vm","backup-id":"1","backup-time":-5,"files":[]}`, ErrBadManifest},
		{"backup-time after 9999", `{"backup-type":"vm","backup-id":"1","backup-time":253402300800,"files":[]}`, ErrBadManifest},
		{"filename too long", mk(`{"filename":"`+strings.Repeat("a", 300)+`.blob","size":1,"csum":`+cs+`}`, ""), ErrBadManifest},
		{"backup-id too long", `{"backup-type":"vm","backup-id":"` + strings.Repeat("1", 256) + `","backup-time":1,"files":[]}`, ErrBadManifest},
		{"file listed twice", mk(file+","+file, ""), ErrBadManifest},
		{"index size 0", mk(`{"filename":"a.img.fidx","size":0,"csum":`+cs+`}`, ""), ErrBadManifest},
		{"signature uppercase", mk(file, `,"signature":"`+strings.Repeat("A", 64)+`"`), ErrBadManifest},
		{"signature short", mk(file, `,"signature":"abcd"`), ErrBadManifest},
		{"fingerprint without signature", mk(file, `,"unprotected":{"key-fingerprint":"`+fp103+`"}`), ErrBadManifest},
		{"encrypt without signature", mk(`{"filename":"a.blob","size":1,"csum":`+cs+`,"crypt-mode":"encrypt"}`, ""), ErrBadManifest},
		{"sign-only without signature", mk(`{"filename":"a.blob","size":1,"csum":`+cs+`,"crypt-mode":"sign-only"}`, ""), ErrBadManifest},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(c.js))
			wantErr(t, err, c.want)
			if err != nil && strings.Contains(err.Error(), strings.Repeat("A", 16)) {
				t.Errorf("message %q echoes the manifest's bytes", err)
			}
		})
	}
}

func TestManifestFileAndVerify(t *testing.T) {
	m := manifest103()
	_, err := m.File("nope.img.fidx")
	wantErr(t, err, ErrNotInManifest)
	for _, s := range []string{"nope.img.fidx", "host/elsa/2020-06-26T13:56:05Z", "test1.img.fidx, abc.blob"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
	c1 := m.Files[0].Csum
	for _, c := range []struct {
		name string
		file string
		size uint64
		csum [32]byte
		want error
		msg  string
	}{
		{"ok", "test1.img.fidx", 200, c1, nil, ""},
		{"size", "test1.img.fidx", 201, c1, ErrSizeMismatch, "manifest size 200 bytes, actual 201 bytes"},
		{"csum", "test1.img.fidx", 200, [32]byte{9}, ErrCsumMismatch, "manifest csum 0101"},
		{"missing", "x.blob", 200, c1, ErrNotInManifest, "x.blob"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := m.VerifyFile(c.file, c.size, c.csum)
			wantErr(t, err, c.want)
			if c.want != nil && (!strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), c.file)) {
				t.Errorf("message %q lacks %q / %q", err, c.msg, c.file)
			}
		})
	}
	wantErr(t, m.AddFile(FileInfo{Filename: "abc.blob"}), ErrBadManifest)
	wantErr(t, m.AddFile(FileInfo{Filename: "a/b.blob"}), ErrBadName)
	wantErr(t, m.AddFile(FileInfo{Filename: "c.blob", CryptMode: "bogus"}), ErrBadManifest)
	wantErr(t, m.AddFile(FileInfo{Filename: "c.blob"}), nil)
	if m.Files[2].CryptMode != CryptNone {
		t.Error("AddFile did not default crypt-mode")
	}
}
