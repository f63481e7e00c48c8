package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/websession"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestUsersCreatePrintsAWorkingToken(t *testing.T) {
	dbURL := testenv.DatabaseURL(t)
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": dbURL, "TOOLGATE_DATA_DIR": t.TempDir()}[k]
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"users", "create", "--email", "ops@example.test", "--password-stdin", "--org", "Ops Team", "--token"},
		strings.NewReader("a long enough password\n"), &out, &errOut, getenv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	token := strings.TrimSpace(out.String())
	if !strings.HasPrefix(token, "tgp_") || !strings.Contains(errOut.String(), "owning organization Ops Team (ops-team)") {
		t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
	}
	if strings.Contains(errOut.String(), "a long enough password") {
		t.Fatal("the password was echoed")
	}

	// The same email again fails with a clear message and exit 1.
	out.Reset()
	errOut.Reset()
	code = run(context.Background(), []string{"users", "create", "--email", "OPS@example.test", "--password-stdin"},
		strings.NewReader("a long enough password\n"), &out, &errOut, getenv)
	if code != 1 || !strings.Contains(errOut.String(), "an account with email OPS@example.test exists") {
		t.Fatalf("duplicate: exit %d: %s", code, errOut.String())
	}
	// A short password is refused before anything is written.
	errOut.Reset()
	code = run(context.Background(), []string{"users", "create", "--email", "x@example.test", "--password-stdin"},
		strings.NewReader("short\n"), &out, &errOut, getenv)
	if code != 1 || !strings.Contains(errOut.String(), "password: Use at least 10 characters.") {
		t.Fatalf("short password: exit %d: %s", code, errOut.String())
	}
	// Missing flags are a usage error.
	errOut.Reset()
	if code := run(context.Background(), []string{"users", "create", "--email", "x@example.test"}, strings.NewReader(""), &out, &errOut, getenv); code != 2 {
		t.Fatalf("missing --password-stdin: exit %d", code)
	}

	// The token works against the API of a server on the same database.
	a, err := open(context.Background(), &errOut, getenv, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close(context.Background())
	q, err := a.queue(false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.handler(websession.NewStore(a.store.Pool(), 0), q, nil, nil, nil, nil))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/orgs/ops-team", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("token from users create: %d", res.StatusCode)
	}
}

func TestBadConfigurationStopsStartUpNamingTheVariable(t *testing.T) {
	for name, value := range map[string]string{
		"TOOLGATE_SIGNUP":           "sometimes",
		"TOOLGATE_ADDR":             "no-port",
		"TOOLGATE_BASE_URL":         "ftp://x",
		"TOOLGATE_SESSION_LIFETIME": "forever",
		"MEILI_URL":                 "http://meili.test:7700",
		"TOOLGATE_LOG_FORMAT":       "xml",
		"TOOLGATE_DEMO":             "perhaps",
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"serve"}, strings.NewReader(""), &out, &errOut, func(k string) string {
			if k == name {
				return value
			}
			return ""
		})
		want := name
		if name == "MEILI_URL" {
			want = "MEILI_MASTER_KEY is required when MEILI_URL is set"
		}
		if code != 1 || !strings.Contains(errOut.String(), want) {
			t.Errorf("%s=%q: exit %d, stderr %q", name, value, code, errOut.String())
		}
	}
}

func TestVersionAndUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version"}, nil, &out, &errOut, func(string) string { return "" }); code != 0 || !strings.HasPrefix(out.String(), "toolgate ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	if code := run(context.Background(), []string{"frobnicate"}, nil, &out, &errOut, func(string) string { return "" }); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errOut.String())
	}
}
