package auth

import (
	"strings"
	"testing"
)

func TestPasswordHashing(t *testing.T) {
	hash, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash format: %s", hash)
	}
	if ok, err := VerifyPassword(hash, "correct horse battery"); !ok || err != nil {
		t.Fatalf("right password: %v %v", ok, err)
	}
	if ok, _ := VerifyPassword(hash, "correct horse batterY"); ok {
		t.Fatal("wrong password accepted")
	}
	other, _ := HashPassword("correct horse battery")
	if other == hash {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, bad := range []string{"", "$2a$10$abc", "$argon2id$v=19$m=x$y$z", "$argon2id$v=19$m=1,t=1,p=1$!!$!!"} {
		if _, err := VerifyPassword(bad, "x"); err == nil {
			t.Errorf("VerifyPassword(%q) gave no error", bad)
		}
	}
}

func TestSecrets(t *testing.T) {
	plain, hash, display := NewSecret(PersonalTokenPrefix)
	if !strings.HasPrefix(plain, "tgp_") || len(plain) != 4+32 || !strings.HasPrefix(plain, display) || len(display) != 10 {
		t.Fatalf("secret %q display %q", plain, display)
	}
	if string(HashSecret(plain)) != string(hash) {
		t.Fatal("hash differs")
	}
	again, _, _ := NewSecret(PersonalTokenPrefix)
	if again == plain {
		t.Fatal("two secrets are equal")
	}
}

func TestRoles(t *testing.T) {
	if !Owner.AtLeast(Admin) || Admin.AtLeast(Owner) || !Viewer.AtLeast(Viewer) || Role("king").AtLeast(Viewer) || Role("").Valid() {
		t.Fatal("role order is wrong")
	}
}

func BenchmarkHashPassword(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := HashPassword("correct horse battery"); err != nil {
			b.Fatal(err)
		}
	}
}
