package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// concrete fills a route's parameters with Acme's real identifiers.
func concrete(path string) string {
	r := strings.NewReplacer(":org", "acme", ":ws", "default", ":user", "1", ":id", "1",
		":token", "tgi_x", ":section", "sources", "*", "")
	return r.Replace(path)
}

// TestEveryRouteRefusesOutsiders takes every route of the real route table
// that names an organization and calls it as the owner of another one: each
// answers 404 and shows nothing of Acme.
func TestEveryRouteRefusesOutsiders(t *testing.T) {
	f := newFixture(t)
	outsiderToken := tokenClient(t, f.env, "outsider@globex.test")
	tried := 0
	for _, r := range f.echo.Routes() {
		if !strings.Contains(r.Path, ":org") || strings.HasSuffix(r.Path, "/*") || strings.HasPrefix(r.Method, "echo_route") {
			continue
		}
		path := concrete(r.Path)
		callers := []*client{f.outsider}
		if strings.HasPrefix(path, "/api/") {
			callers = append(callers, outsiderToken)
		}
		for _, c := range callers {
			var res response
			switch {
			case strings.HasPrefix(path, "/api/") || path == "/mcp":
				// The API and the MCP endpoint answer 401 with a challenge.
				res = c.api(r.Method, path, map[string]any{})
			case r.Method == http.MethodPost:
				res = c.post(path, url.Values{"name": {"Pwned"}, "slug": {"pwned"}, "role": {"owner"}, "email": {"x@y.test"}, "confirm": {"default"}}, false)
			default:
				res = c.do(r.Method, path, nil, "", false)
			}
			if res.status != http.StatusNotFound {
				t.Errorf("%s %s as outsider: status %d, want 404: %s", r.Method, path, res.status, excerpt(res.body))
			}
			if strings.Contains(res.body, "owner@acme.test") || strings.Contains(res.body, ">Acme<") || strings.Contains(res.body, `"Acme"`) {
				t.Errorf("%s %s leaked Acme to an outsider", r.Method, path)
			}
			tried++
		}
	}
	if tried < 40 {
		t.Fatalf("only %d outsider requests: the route table was not walked", tried)
	}
	// Nothing changed in Acme.
	var org struct{ Name string }
	f.owner.api("GET", "/api/v1/orgs/acme", nil).json(t, &org)
	if org.Name != "Acme" {
		t.Fatalf("Acme was changed by an outsider: %q", org.Name)
	}
}

// TestEveryRouteNeedsSignIn calls every private route anonymously: pages
// redirect to sign-in (htmx gets HX-Redirect), the API answers 401.
func TestEveryRouteNeedsSignIn(t *testing.T) {
	f := newFixture(t)
	public := map[string]bool{"/healthz": true, "/readyz": true, "/static/*": true, "/api/v1/openapi.json": true,
		"/signin": true, "/signup": true, "/signout": true, "/invitations/:token": true, "": true, "/*": true}
	for _, r := range f.echo.Routes() {
		if public[r.Path] && !(r.Path == "/invitations/:token" && r.Method == http.MethodPost) || strings.HasSuffix(r.Path, "/*") || strings.HasPrefix(r.Method, "echo_route") {
			continue
		}
		path := concrete(r.Path)
		for _, htmx := range []bool{false, true} {
			var res response
			if r.Method == http.MethodGet {
				res = f.anon.do(r.Method, path, nil, "", htmx)
			} else {
				res = f.anon.do(r.Method, path, strings.NewReader("_csrf="+f.anon.csrf()), "application/x-www-form-urlencoded", htmx)
			}
			switch {
			case strings.HasPrefix(path, "/api/") || path == "/mcp":
				// The API and the MCP endpoint answer 401 with a challenge.
				if res.status != http.StatusUnauthorized {
					t.Errorf("%s %s anonymous: status %d, want 401", r.Method, path, res.status)
				}
			case htmx:
				if !strings.HasPrefix(res.header.Get("HX-Redirect"), "/signin") {
					t.Errorf("%s %s anonymous htmx: HX-Redirect %q, want /signin", r.Method, path, res.header.Get("HX-Redirect"))
				}
			default:
				if res.status != http.StatusSeeOther || !strings.HasPrefix(res.header.Get("Location"), "/signin") {
					t.Errorf("%s %s anonymous: %d to %q, want 303 to /signin", r.Method, path, res.status, res.header.Get("Location"))
				}
			}
		}
	}
}

// tokenClient returns a client that authenticates by a fresh personal access token.
func tokenClient(t testing.TB, e *env, email string) *client {
	t.Helper()
	c := e.signIn(email)
	res := c.api("POST", "/api/v1/me/tokens", map[string]any{"name": "test"})
	var tok struct{ Token string }
	res.json(t, &tok)
	if !strings.HasPrefix(tok.Token, "tgp_") {
		t.Fatalf("create token: %d %s", res.status, res.body)
	}
	return &client{e: e, http: http.DefaultClient, token: tok.Token}
}
