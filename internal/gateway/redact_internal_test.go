package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sources"
)

// TestRedactJSONEscapedSecrets scrubs a secret from structured content
// however the upstream's encoder escaped it: Go's escapes, "\/" (PHP),
// "\u002B" (.NET) and plain \u escapes of every character.
func TestRedactJSONEscapedSecrets(t *testing.T) {
	const secret = "sk_live/AB+cd<&>"
	auth := &sources.Auth{}
	auth.SetHeader("X-Api-Key", secret)
	for _, raw := range []string{
		`{"token":"sk_live/AB+cd<&>","n":12345678901234567890}`,
		`{"token":"sk_live\/AB\u002Bcd\u003c\u0026\u003e","n":12345678901234567890}`,
		`{"token":"\u0073\u006b_live/AB+cd<&>","n":12345678901234567890}`,
		`{"nested":[{"token":"sk_live\/AB+cd<&>"}],"n":12345678901234567890}`,
	} {
		got := redactJSON(auth, []byte(raw))
		if got == nil || !json.Valid(got) {
			t.Fatalf("%s: %q", raw, got)
		}
		var decoded any
		_ = json.Unmarshal(got, &decoded)
		back, _ := json.Marshal(decoded)
		if strings.Contains(string(back), "sk_live") || !strings.Contains(string(got), sources.Mask) {
			t.Errorf("%s: the secret is left in %s", raw, got)
		}
		if !strings.Contains(string(got), "12345678901234567890") {
			t.Errorf("%s: the number lost its digits: %s", raw, got)
		}
	}
	// Without secrets, and without escapes, the document is kept as sent.
	raw := []byte(`{"b":1,"a":"x"}`)
	if got := redactJSON(auth, raw); string(got) != string(raw) {
		t.Errorf("rewritten: %s", got)
	}
	if got := redactJSON(&sources.Auth{}, []byte(`{"a":"\/"}`)); string(got) != `{"a":"\/"}` {
		t.Errorf("no credential, rewritten: %s", got)
	}
}
