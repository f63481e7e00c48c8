package sources

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	var a Auth
	secret := `s3cr"t&<v>/+=`
	a.SetHeader("Authorization", "Bearer "+secret)
	a.AddSecret(secret)
	for _, echoed := range []string{
		"token " + secret,
		"url https://x.test/?k=" + url.QueryEscape(secret),
		fmt.Sprintf("go %%q: %q", secret),
		`json: {"t":"s3cr\"t\u0026\u003cv\u003e/+="}`,
		`js: {"t":"s3cr\"t&<v>/+="}`,
		"header Authorization: Bearer " + secret,
	} {
		if got := a.Redact(echoed); strings.Contains(got, "s3cr") {
			t.Errorf("not redacted: %s -> %s", echoed, got)
		}
	}
	var none *Auth
	if none.Redact("x") != "x" || none.RedactError(nil) != nil {
		t.Error("a nil Auth changed its input")
	}
}
