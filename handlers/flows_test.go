package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestFirstSignUpOwnsANewOrganization(t *testing.T) {
	e := newEnv(t, nil)
	c := e.anon()
	if res := c.get("/signin"); res.status != http.StatusSeeOther || res.header.Get("Location") != "/signup" {
		t.Fatalf("empty instance: /signin should lead to /signup, got %d %q", res.status, res.header.Get("Location"))
	}
	if res := c.get("/signup"); !strings.Contains(res.body, "Set up toolgate") {
		t.Fatalf("first sign-up page: %s", excerpt(res.body))
	}
	res := c.post("/signup", url.Values{"email": {"Ada@Example.test"}, "name": {"Ada"}, "password": {password}, "org_name": {"Analytical Engines"}}, false)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/o/analytical-engines" {
		t.Fatalf("sign up: %d %q %s", res.status, res.header.Get("Location"), excerpt(res.body))
	}
	var orgs struct{ Data []struct{ Slug, Role string } }
	c.api("GET", "/api/v1/orgs", nil).json(t, &orgs)
	if len(orgs.Data) != 1 || orgs.Data[0].Role != "owner" {
		t.Fatalf("orgs after first sign-up: %+v", orgs)
	}
	if res := c.get("/o/analytical-engines/w/default"); res.status != 200 {
		t.Fatalf("default workspace: %d", res.status)
	}
	// After the first account, the default mode is invite: a plain sign-up is refused.
	other := e.anon()
	res = other.post("/signup", url.Values{"email": {"eve@example.test"}, "password": {password}, "org_name": {"Eve"}}, false)
	if res.status != http.StatusForbidden {
		t.Fatalf("second sign-up in invite mode: %d", res.status)
	}
	// The same email again is refused with a field error.
	open := newEnv(t, map[string]string{"TOOLGATE_SIGNUP": "open"})
	open.account("taken@example.test", "First")
	res = open.anon().post("/signup", url.Values{"email": {"TAKEN@example.test"}, "password": {password}, "org_name": {"First"}}, false)
	if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.body, "An account with this email exists") {
		t.Fatalf("duplicate email: %d %s", res.status, excerpt(res.body))
	}
	// Open sign-up gives the newcomer their own organization; a taken slug gets a suffix.
	res = open.anon().post("/signup", url.Values{"email": {"new@example.test"}, "password": {password}, "org_name": {"First"}}, false)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/o/first-2" {
		t.Fatalf("open sign-up: %d %q", res.status, res.header.Get("Location"))
	}
	closed := newEnv(t, map[string]string{"TOOLGATE_SIGNUP": "closed"})
	closed.account("root@example.test", "Root")
	if res := closed.anon().get("/signup"); !strings.Contains(res.body, "does not take new accounts") {
		t.Fatalf("closed sign-up page: %s", excerpt(res.body))
	}
}

func TestSignInIsGenericThrottledAndRenewsTheSession(t *testing.T) {
	e := newEnv(t, map[string]string{"TOOLGATE_BASE_URL": "https://toolgate.example.test"})
	e.account("ada@example.test", "Acme")
	c := e.anon()
	wrongPassword := c.post("/signin", url.Values{"email": {"ada@example.test"}, "password": {"wrong password"}}, false)
	unknownEmail := c.post("/signin", url.Values{"email": {"nobody@example.test"}, "password": {"wrong password"}}, false)
	if wrongPassword.status != 401 || unknownEmail.status != 401 {
		t.Fatalf("statuses %d and %d, want 401", wrongPassword.status, unknownEmail.status)
	}
	msg := regexp.MustCompile(`data-testid="form-error">([^<]*)<`)
	a, b := msg.FindStringSubmatch(wrongPassword.body), msg.FindStringSubmatch(unknownEmail.body)
	if a == nil || b == nil || a[1] != b[1] || a[1] != "Wrong email or password." {
		t.Fatalf("messages differ or missing: %v / %v", a, b)
	}

	// The session cookie is new at sign-in (no fixation), HttpOnly, Lax and,
	// with an https base URL, Secure.
	before := cookie(c.get("/signin").header, "toolgate_session")
	res := c.post("/signin", url.Values{"email": {"ada@example.test"}, "password": {password}}, false)
	after := cookie(res.header, "toolgate_session")
	if after == nil || res.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d, session cookie %v", res.status, after)
	}
	if before != nil && before.Value == after.Value {
		t.Fatal("session token was not renewed at sign-in")
	}
	if !after.HttpOnly || after.SameSite != http.SameSiteLaxMode || !after.Secure {
		t.Fatalf("session cookie attributes: %+v", after)
	}

	// Five failures lock the account for everyone, even with the right password.
	for i := 0; i < 5; i++ {
		e.anon().post("/signin", url.Values{"email": {"ada@example.test"}, "password": {"guess"}}, false)
	}
	res = e.anon().post("/signin", url.Values{"email": {"ada@example.test"}, "password": {password}}, false)
	if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") == "" {
		t.Fatalf("after 5 failures: %d, Retry-After %q", res.status, res.header.Get("Retry-After"))
	}
	// Twenty failures from one address lock that address for every account.
	e.account("bob@example.test", "")
	for i := 0; i < 20; i++ {
		e.anon().post("/signin", url.Values{"email": {"spray" + string(rune('a'+i)) + "@example.test"}, "password": {"guess"}}, false)
	}
	if res := e.anon().post("/signin", url.Values{"email": {"bob@example.test"}, "password": {password}}, false); res.status != http.StatusTooManyRequests {
		t.Fatalf("after 20 failures from one address: %d", res.status)
	}
}

func cookie(h http.Header, name string) *http.Cookie {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestCSRFAndExpiredSessions(t *testing.T) {
	e := newEnv(t, nil)
	e.account("ada@example.test", "Acme")
	c := e.signIn("ada@example.test")
	for name, form := range map[string]url.Values{
		"missing": {"name": {"Renamed"}, "slug": {"acme"}, "_csrf": {""}},
		"wrong":   {"name": {"Renamed"}, "slug": {"acme"}, "_csrf": {"forged"}},
	} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/o/acme/settings", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s CSRF token: status %d, want 403", name, res.StatusCode)
		}
	}
	// A cross-site browser request is refused even before the token is read.
	req, _ := http.NewRequest("POST", e.srv.URL+"/o/acme/settings", strings.NewReader("name=X&slug=acme"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if res, err := c.http.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site POST: %v %v", res.StatusCode, err)
	}
	var org struct{ Name string }
	c.api("GET", "/api/v1/orgs/acme", nil).json(t, &org)
	if org.Name != "Acme" {
		t.Fatalf("a forged request renamed the organization to %q", org.Name)
	}

	// An expired session sends pages to sign-in, htmx by HX-Redirect, the API to 401.
	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE sessions SET expiry = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if res := c.get("/o/acme/members"); res.status != http.StatusSeeOther || res.header.Get("Location") != "/signin?next=%2Fo%2Facme%2Fmembers" {
		t.Fatalf("expired session page: %d %q", res.status, res.header.Get("Location"))
	}
	if res := c.do("GET", "/o/acme/members", nil, "", true); !strings.HasPrefix(res.header.Get("HX-Redirect"), "/signin") {
		t.Fatalf("expired session htmx: HX-Redirect %q", res.header.Get("HX-Redirect"))
	}
	if res := c.api("GET", "/api/v1/me", nil); res.status != http.StatusUnauthorized {
		t.Fatalf("expired session API: %d", res.status)
	}
	// Signing in again returns to the page asked for, but never off-site.
	res := c.post("/signin", url.Values{"email": {"ada@example.test"}, "password": {password}, "next": {"/o/acme/members"}}, false)
	if res.header.Get("Location") != "/o/acme/members" {
		t.Fatalf("next: %q", res.header.Get("Location"))
	}
	res = e.anon().post("/signin", url.Values{"email": {"ada@example.test"}, "password": {password}, "next": {"https://evil.test/x"}}, false)
	if loc := res.header.Get("Location"); loc != "/x" {
		t.Fatalf("off-site next became %q", loc)
	}
	res = e.anon().post("/signin", url.Values{"email": {"ada@example.test"}, "password": {password}, "next": {"//evil.test"}}, false)
	if loc := res.header.Get("Location"); loc != "/" {
		t.Fatalf("protocol-relative next became %q", loc)
	}
	// Browsers drop a tab and read a backslash as a slash: both would
	// turn these into //evil.test.
	for _, next := range []string{"/\t/evil.test", "/\\evil.test", "/\n/evil.test"} {
		res = e.anon().post("/signin", url.Values{"email": {"ada@example.test"}, "password": {password}, "next": {next}}, false)
		if loc := res.header.Get("Location"); loc != "/" {
			t.Fatalf("next %q became %q", next, loc)
		}
	}
}

// invitationLink creates an invitation through the console and reads the
// one-time link from the members page.
func invitationLink(t *testing.T, c *client, org, email, role string) string {
	t.Helper()
	res := c.post("/o/"+org+"/invitations", url.Values{"email": {email}, "role": {role}}, false)
	if res.status != http.StatusSeeOther {
		t.Fatalf("invite %s: %d %s", email, res.status, excerpt(res.body))
	}
	page := c.get("/o/" + org + "/members")
	m := regexp.MustCompile(`data-testid="invitation-link">([^<]+)<`).FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("no invitation link on the members page: %s", excerpt(page.body))
	}
	if again := c.get("/o/" + org + "/members"); strings.Contains(again.body, m[1]) {
		t.Fatal("the invitation link was shown twice")
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

func TestInvitations(t *testing.T) {
	e := newEnv(t, nil)
	e.account("owner@acme.test", "Acme")
	e.join(e.account("admin@acme.test", ""), "acme", "admin")
	owner, admin := e.signIn("owner@acme.test"), e.signIn("admin@acme.test")

	// Admins cannot invite owners; bad input stays in the form with its error.
	res := admin.post("/o/acme/invitations", url.Values{"email": {"boss@acme.test"}, "role": {"owner"}}, true)
	if res.status != 422 || !strings.Contains(res.body, "Only owners can invite owners.") || !strings.Contains(res.body, `value="boss@acme.test"`) {
		t.Fatalf("admin inviting an owner: %d %s", res.status, excerpt(res.body))
	}

	// A newcomer signs up through the link and lands in Acme as member.
	link := invitationLink(t, admin, "acme", "new@acme.test", "member")
	newcomer := e.anon()
	res = newcomer.get(link)
	if res.status != http.StatusSeeOther || !strings.HasPrefix(res.header.Get("Location"), "/signup?invite=tgi_") {
		t.Fatalf("anonymous invitation link: %d %q", res.status, res.header.Get("Location"))
	}
	signup := newcomer.get(res.header.Get("Location"))
	if !strings.Contains(signup.body, "Join Acme") || !strings.Contains(signup.body, `value="new@acme.test"`) {
		t.Fatalf("invited sign-up page: %s", signup.body[strings.Index(signup.body, "<main"):])
	}
	token := strings.TrimPrefix(link, "/invitations/")
	res = newcomer.post("/signup", url.Values{"email": {"other@acme.test"}, "password": {password}, "invite": {token}}, false)
	if res.status != 422 || !strings.Contains(res.body, "This invitation is for new@acme.test.") {
		t.Fatalf("sign-up with another email: %d %s", res.status, excerpt(res.body))
	}
	res = newcomer.post("/signup", url.Values{"email": {"new@acme.test"}, "password": {password}, "invite": {token}}, false)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/o/acme" {
		t.Fatalf("invited sign-up: %d %q %s", res.status, res.header.Get("Location"), excerpt(res.body))
	}
	var me struct{ Role string }
	newcomer.api("GET", "/api/v1/orgs/acme", nil).json(t, &me)
	if me.Role != "member" {
		t.Fatalf("newcomer role %q", me.Role)
	}
	// The link works once.
	if res := e.anon().get(link); res.status != http.StatusNotFound {
		t.Fatalf("used link: %d", res.status)
	}

	// An existing account accepts while signed in; the wrong account cannot.
	e.account("existing@globex.test", "Globex")
	link = invitationLink(t, owner, "acme", "existing@globex.test", "viewer")
	if res := owner.get(link); !strings.Contains(res.body, "sent to another email") {
		t.Fatalf("wrong account sees: %s", excerpt(res.body))
	}
	if res := owner.post(link, nil, false); res.status != http.StatusForbidden {
		t.Fatalf("wrong account accepts: %d", res.status)
	}
	existing := e.anon()
	if res := existing.get(link); !strings.HasPrefix(res.header.Get("Location"), "/signin?next=%2Finvitations%2F") {
		t.Fatalf("existing account, signed out: %q", res.header.Get("Location"))
	}
	existing = e.signIn("existing@globex.test")
	if res := existing.post(link, nil, false); res.status != http.StatusSeeOther || res.header.Get("Location") != "/o/acme" {
		t.Fatalf("accept: %d %q", res.status, res.header.Get("Location"))
	}

	// Revoked and expired invitations stop working.
	link = invitationLink(t, owner, "acme", "revoked@acme.test", "member")
	var invs struct{ Data []struct{ ID int64 } }
	owner.api("GET", "/api/v1/orgs/acme/invitations", nil).json(t, &invs)
	if len(invs.Data) != 1 {
		t.Fatalf("pending invitations: %+v", invs)
	}
	if res := owner.api("DELETE", "/api/v1/orgs/acme/invitations/"+itoa(invs.Data[0].ID), nil); res.status != 204 {
		t.Fatalf("revoke: %d", res.status)
	}
	if res := e.anon().get(link); res.status != http.StatusNotFound {
		t.Fatalf("revoked link: %d", res.status)
	}
	link = invitationLink(t, owner, "acme", "late@acme.test", "member")
	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE email = 'late@acme.test'`); err != nil {
		t.Fatal(err)
	}
	if res := e.anon().get(link); res.status != http.StatusNotFound {
		t.Fatalf("expired link: %d", res.status)
	}

	// The API returns the link once, at creation.
	var created struct{ URL string }
	res = owner.api("POST", "/api/v1/orgs/acme/invitations", map[string]any{"email": "api@acme.test", "role": "admin"})
	res.json(t, &created)
	if res.status != 201 || !strings.Contains(created.URL, "/invitations/tgi_") {
		t.Fatalf("API invite: %d %s", res.status, res.body)
	}
	if list := owner.api("GET", "/api/v1/orgs/acme/invitations", nil); strings.Contains(list.body, "tgi_") {
		t.Fatal("the invitation list exposes tokens")
	}
	if res := owner.api("POST", "/api/v1/orgs/acme/invitations", map[string]any{"email": "api@acme.test", "role": "admin"}); res.status != 422 {
		t.Fatalf("second invitation to the same address: %d", res.status)
	}

	// No secret reached the log.
	if logs := logsOf(t); strings.Contains(logs, token) || strings.Contains(logs, password) || strings.Contains(logs, created.URL) {
		t.Fatal("a secret reached the log")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
