package crypto

import (
	"context"
	"encoding/hex"
	"testing"
)

// TestScryptVector10_3: the key of FORMAT.md §10.3 is scrypt of password
// "test" with an empty salt and the parameters proxmox-backup-client writes
// (N=65536, r=8, p=1, 32 bytes), derived here through DeriveKEK, the path
// every passphrase-protected key file takes; its fingerprint is §10.3's.
func TestScryptVector10_3(t *testing.T) {
	k := &KeyFile{KDF: &KDF{Scrypt: &ScryptParams{N: 65536, R: 8, P: 1, Salt: []byte{}}}}
	kek, err := k.DeriveKEK(context.Background(), []byte("test"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "28cdb1a3bef39396c3860e00d448fe7a0efd8244486ab6feb30457681d31597e"
	if got := hex.EncodeToString(kek); got != want {
		t.Fatalf("scrypt(\"test\", \"\", 65536, 8, 1) = %s, want %s (§10.3)", got, want)
	}
	c, err := NewConfig([KeySize]byte(kek))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Fingerprint().String(); got != "12:b9:b7:74:bb:3d:89:95:2b:97:cb:c2:82:f0:0c:14:2b:83:ba:7f:96:62:6a:a1:5a:44:9a:63:e8:91:fe:25" {
		t.Errorf("fingerprint of the §10.3 key: %s", got)
	}
}
