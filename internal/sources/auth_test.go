package sources

import (
	"fmt"
	"net/http"
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

func TestApplyKeepsTheQuery(t *testing.T) {
	var a Auth
	a.SetQuery("api_key", "k&1")
	a.SetHeader("X-Token", "t")
	req, _ := http.NewRequest("GET", "https://x.test/p?b=1,2&api_key=theirs&a=x%20y", nil)
	a.Apply(req)
	if got, want := req.URL.RawQuery, "b=1,2&a=x%20y&api_key=k%261"; got != want {
		t.Errorf("query = %q, want %q", got, want)
	}
	if req.Header.Get("X-Token") != "t" {
		t.Error("header not set")
	}
	if got := a.WithQuery("https://x.test/p"); got != "https://x.test/p?api_key=k%261" {
		t.Errorf("WithQuery = %q", got)
	}
}
