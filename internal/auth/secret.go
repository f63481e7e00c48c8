package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// Secret prefixes say what a secret is when it turns up somewhere it should not.
const (
	PersonalTokenPrefix = "tgp_"
	InvitationPrefix    = "tgi_"
	APIKeyPrefix        = "tgk_"
)

var secretEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewSecret returns a random secret with 160 bits of entropy, the SHA-256
// hash to store, and a short display prefix that identifies it in lists.
// SHA-256 suffices because the secret is random, not chosen by a person.
func NewSecret(prefix string) (plain string, hash []byte, display string) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	plain = prefix + strings.ToLower(secretEncoding.EncodeToString(b))
	return plain, HashSecret(plain), plain[:len(prefix)+6]
}

// HashSecret is the stored form of a secret.
func HashSecret(plain string) []byte {
	sum := sha256.Sum256([]byte(plain))
	return sum[:]
}
