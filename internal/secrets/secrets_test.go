package secrets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func ring(t *testing.T, entries ...string) *Ring {
	t.Helper()
	r, err := ParseRing(strings.Join(entries, ","))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func entry(t *testing.T) string {
	t.Helper()
	e, err := NewKeyEntry()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSealOpen(t *testing.T) {
	r := ring(t, entry(t))
	ad := []byte("toolgate/credential/v1 org=1 id=cred_a")
	plain := []byte(`{"value":"canary-4f1c"}`)
	a, err := r.Seal(plain, ad)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Seal(plain, ad)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Ciphertext, b.Ciphertext) || bytes.Equal(a.Nonce, b.Nonce) {
		t.Error("equal plaintexts sealed to equal ciphertexts or nonces")
	}
	if len(a.Nonce) != NonceSize || a.KeyID != r.Current() {
		t.Errorf("sealed: nonce %d bytes, key %q", len(a.Nonce), a.KeyID)
	}
	if bytes.Contains(a.Ciphertext, []byte("canary")) {
		t.Error("the ciphertext carries the plaintext")
	}
	got, err := r.Open(a, ad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open = %q, %v", got, err)
	}

	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 0x01
		return c
	}
	cases := map[string]struct {
		s  Sealed
		ad []byte
	}{
		"a changed ciphertext byte":  {Sealed{a.KeyID, a.Nonce, flip(a.Ciphertext, 0)}, ad},
		"a changed tag byte":         {Sealed{a.KeyID, a.Nonce, flip(a.Ciphertext, len(a.Ciphertext)-1)}, ad},
		"a changed nonce byte":       {Sealed{a.KeyID, flip(a.Nonce, 5), a.Ciphertext}, ad},
		"another credential id":      {a, []byte("toolgate/credential/v1 org=1 id=cred_b")},
		"another organization":       {a, []byte("toolgate/credential/v1 org=2 id=cred_a")},
		"a short nonce":              {Sealed{a.KeyID, a.Nonce[:8], a.Ciphertext}, ad},
		"another value's ciphertext": {Sealed{a.KeyID, a.Nonce, b.Ciphertext}, ad},
	}
	for name, c := range cases {
		if _, err := r.Open(c.s, c.ad); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: open error = %v, want ErrOpen", name, err)
		}
	}
}

func TestRingKeys(t *testing.T) {
	old, cur := entry(t), entry(t)
	before := ring(t, old)
	sealed, err := before.Seal([]byte("v"), nil)
	if err != nil {
		t.Fatal(err)
	}
	after := ring(t, cur, old)
	if after.Current() == sealed.KeyID || len(after.IDs()) != 2 {
		t.Fatalf("current %q, ids %v", after.Current(), after.IDs())
	}
	if got, err := after.Open(sealed, nil); err != nil || string(got) != "v" {
		t.Errorf("an older key no longer opens its values: %q %v", got, err)
	}
	_, err = ring(t, cur).Open(sealed, nil)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), sealed.KeyID) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestParseRingErrors(t *testing.T) {
	good := entry(t)
	id, _, _ := strings.Cut(good, ":")
	for name, in := range map[string]string{
		"empty":         " ",
		"no colon":      "abc",
		"bad id":        "k 1:AAAA",
		"not base64":    "k1:!!!",
		"short key":     "k1:AAAA",
		"a repeated id": good + "," + good,
		"long id":       strings.Repeat("k", 33) + ":" + strings.SplitN(good, ":", 2)[1],
	} {
		if _, err := ParseRing(in); err == nil {
			t.Errorf("%s: %q parsed", name, in)
		} else if strings.Contains(err.Error(), strings.SplitN(good, ":", 2)[1]) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
	if r, err := ParseRing(" " + good + "\n"); err != nil || r.Current() != id {
		t.Errorf("whitespace around an entry: %v", err)
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", KeyFileName)
	r1, err := LoadOrCreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode().Perm(), err)
	}
	r2, err := LoadOrCreateFile(path)
	if err != nil || r2.Current() != r1.Current() {
		t.Fatalf("second load made another key: %v %v", r2, err)
	}
	sealed, _ := r1.Seal([]byte("x"), nil)
	id, err := PrependToFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := LoadOrCreateFile(path)
	if err != nil || r3.Current() != id || !r3.Has(r1.Current()) {
		t.Fatalf("after prepend: current %q ids %v, %v", r3.Current(), r3.IDs(), err)
	}
	if _, err := r3.Open(sealed, nil); err != nil {
		t.Errorf("the old key was lost: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after prepend %v", fi.Mode().Perm())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable key file was accepted: %v", err)
	}
}
