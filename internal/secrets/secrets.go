// Package secrets seals values with AES-256-GCM under a key ring. Each
// value gets a fresh 96-bit nonce, and the caller's associated data (for a
// credential: its id and organization) is bound into the tag, so a
// ciphertext copied to another row does not open.
package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// KeySize is the length of an AES-256 key.
const KeySize = 32

// NonceSize is GCM's standard 96-bit nonce.
const NonceSize = 12

// ErrUnknownKey: a value was sealed under a key id the ring does not hold.
var ErrUnknownKey = errors.New("sealed under a key that is not in TOOLGATE_SECRET_KEYS")

// ErrOpen: the ciphertext, nonce or associated data does not match; the
// value was changed, copied to another row, or sealed under another key
// with the same id.
var ErrOpen = errors.New("the sealed value does not open: changed, moved to another row, or sealed under another key")

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Ring is a set of keys; the first is current and seals new values, the
// others only open older ones.
type Ring struct {
	current string
	aeads   map[string]cipher.AEAD
	order   []string
}

// Sealed is a value under a key: what is stored.
type Sealed struct {
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
}

// ParseRing reads a key ring written as comma- or whitespace-separated
// "id:base64" entries, the current key first. Keys are 32 bytes in
// standard or URL-safe base64.
func ParseRing(s string) (*Ring, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
	if len(fields) == 0 {
		return nil, errors.New("no keys: expected id:base64 entries, e.g. from `toolgate keys generate`")
	}
	r := &Ring{aeads: map[string]cipher.AEAD{}}
	for i, f := range fields {
		id, enc, ok := strings.Cut(f, ":")
		if !ok || !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("entry %d: expected id:base64 with an id of letters, digits, - and _ (at most 32)", i+1)
		}
		if _, dup := r.aeads[id]; dup {
			return nil, fmt.Errorf("entry %d: key id %q appears twice", i+1, id)
		}
		key, err := decodeKey(enc)
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s): %w", i+1, id, err)
		}
		aead, err := newAEAD(key)
		if err != nil {
			return nil, err
		}
		r.aeads[id] = aead
		r.order = append(r.order, id)
	}
	r.current = r.order[0]
	return r, nil
}

func decodeKey(enc string) ([]byte, error) {
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if key, err := e.DecodeString(enc); err == nil {
			if len(key) != KeySize {
				return nil, fmt.Errorf("the key is %d bytes; AES-256 needs %d", len(key), KeySize)
			}
			return key, nil
		}
	}
	return nil, errors.New("the key is not base64")
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Current is the id of the key that seals new values.
func (r *Ring) Current() string { return r.current }

// IDs lists the ring's key ids, current first.
func (r *Ring) IDs() []string { return append([]string(nil), r.order...) }

// Has reports whether the ring holds a key id.
func (r *Ring) Has(id string) bool { _, ok := r.aeads[id]; return ok }

// Seal encrypts plaintext under the current key with a fresh nonce,
// binding ad.
func (r *Ring) Seal(plaintext, ad []byte) (Sealed, error) {
	nonce := make([]byte, NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, fmt.Errorf("nonce: %w", err)
	}
	ct := r.aeads[r.current].Seal(nil, nonce, plaintext, ad)
	return Sealed{KeyID: r.current, Nonce: nonce, Ciphertext: ct}, nil
}

// Open decrypts a sealed value with the same associated data it was
// sealed with.
func (r *Ring) Open(s Sealed, ad []byte) ([]byte, error) {
	aead, ok := r.aeads[s.KeyID]
	if !ok {
		return nil, fmt.Errorf("key %q: %w", s.KeyID, ErrUnknownKey)
	}
	if len(s.Nonce) != NonceSize {
		return nil, ErrOpen
	}
	pt, err := aead.Open(nil, s.Nonce, s.Ciphertext, ad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// NewKeyEntry returns a fresh "id:base64" entry for a key ring.
func NewKeyEntry() (string, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	id := fmt.Sprintf("k%s-%x", time.Now().UTC().Format("20060102"), suffix)
	return id + ":" + base64.StdEncoding.EncodeToString(key), nil
}

// KeyFileName is the key ring file of the embedded default, in the data
// directory.
const KeyFileName = "secret-keys"

// LoadOrCreateFile reads the key ring kept at path, creating it with one
// fresh key (mode 0600) the first time. A file readable by others is
// refused.
func LoadOrCreateFile(path string) (*Ring, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		entry, err := NewKeyEntry()
		if err != nil {
			return nil, err
		}
		if err := writeKeyFile(path, []byte(entry+"\n"), true); err != nil {
			return nil, err
		}
		return ParseRing(entry)
	}
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key file %s is readable by others (mode %v); run chmod 600 on it", path, fi.Mode().Perm())
	}
	r, err := ParseRing(string(b))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return r, nil
}

// PrependToFile puts a fresh key at the head of the key file at path, so it
// becomes current, and returns its id. The older keys stay to open values
// not yet re-encrypted.
func PrependToFile(path string) (string, error) {
	old, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read key file: %w", err)
	}
	if _, err := ParseRing(string(old)); err != nil {
		return "", fmt.Errorf("key file %s: %w", path, err)
	}
	entry, err := NewKeyEntry()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	b.WriteString(entry + "\n")
	b.Write(bytes.TrimSpace(old))
	b.WriteString("\n")
	if err := writeKeyFile(path, b.Bytes(), false); err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(entry, ":")
	return id, nil
}

// writeKeyFile writes through a temporary file and a rename, so a crash
// leaves the old file or the new one, never half of one.
func writeKeyFile(path string, b []byte, exclusive bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if exclusive {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("create key file: %w", err)
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-keys-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
