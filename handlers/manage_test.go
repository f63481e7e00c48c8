package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestMembersRolesAndTheLastOwner(t *testing.T) {
	f := newFixture(t)
	ids := map[string]int64{}
	var members struct {
		Data []struct {
			UserID int64 `json:"user_id"`
			Email  string
			Role   string
		}
	}
	f.owner.api("GET", "/api/v1/orgs/acme/members", nil).json(t, &members)
	for _, m := range members.Data {
		ids[m.Email] = m.UserID
	}
	ownerID, adminID, memberID, viewerID := ids["owner@acme.test"], ids["admin@acme.test"], ids["member@acme.test"], ids["viewer@acme.test"]

	// The last owner can be neither demoted nor removed, nor leave.
	res := f.owner.post("/o/acme/members/"+itoa(ownerID)+"/role", url.Values{"role": {"admin"}}, true)
	if res.status != 422 || !strings.Contains(res.body, "The last owner cannot be demoted") {
		t.Fatalf("demote last owner (htmx): %d %s", res.status, excerpt(res.body))
	}
	if res := f.owner.api("PATCH", "/api/v1/orgs/acme/members/"+itoa(ownerID), map[string]any{"role": "viewer"}); res.status != 422 {
		t.Fatalf("demote last owner (API): %d", res.status)
	}
	if res := f.owner.api("DELETE", "/api/v1/orgs/acme/members/"+itoa(ownerID), nil); res.status != 409 || !strings.Contains(res.body, "last_owner") {
		t.Fatalf("last owner leaves (API): %d %s", res.status, res.body)
	}

	// Admins manage members and viewers, but neither owners nor the owner role.
	if res := f.admin.api("PATCH", "/api/v1/orgs/acme/members/"+itoa(ownerID), map[string]any{"role": "member"}); res.status != 403 {
		t.Fatalf("admin demotes owner: %d", res.status)
	}
	if res := f.admin.api("PATCH", "/api/v1/orgs/acme/members/"+itoa(memberID), map[string]any{"role": "owner"}); res.status != 403 {
		t.Fatalf("admin grants owner: %d", res.status)
	}
	if res := f.admin.api("DELETE", "/api/v1/orgs/acme/members/"+itoa(ownerID), nil); res.status != 403 {
		t.Fatalf("admin removes owner: %d", res.status)
	}
	// Members cannot remove others.
	if res := f.member.api("DELETE", "/api/v1/orgs/acme/members/"+itoa(viewerID), nil); res.status != 403 {
		t.Fatalf("member removes viewer: %d", res.status)
	}
	// A role change through htmx swaps the row in place.
	res = f.admin.post("/o/acme/members/"+itoa(viewerID)+"/role", url.Values{"role": {"member"}}, true)
	if res.status != 200 || !strings.Contains(res.body, `id="member-`+itoa(viewerID)+`"`) || strings.Contains(res.body, "<html") {
		t.Fatalf("role change fragment: %d %s", res.status, excerpt(res.body))
	}
	// With a second owner the first may step down.
	if res := f.owner.api("PATCH", "/api/v1/orgs/acme/members/"+itoa(adminID), map[string]any{"role": "owner"}); res.status != 200 {
		t.Fatalf("owner promotes admin: %d %s", res.status, res.body)
	}
	if res := f.owner.api("PATCH", "/api/v1/orgs/acme/members/"+itoa(ownerID), map[string]any{"role": "admin"}); res.status != 200 {
		t.Fatalf("owner steps down: %d %s", res.status, res.body)
	}
	// A removed member loses access at once.
	if res := f.admin.post("/o/acme/members/"+itoa(memberID)+"/remove", nil, true); res.status != 200 {
		t.Fatalf("remove member: %d %s", res.status, res.body)
	}
	if res := f.member.get("/o/acme/w/default"); res.status != 404 {
		t.Fatalf("removed member still sees the workspace: %d", res.status)
	}
	// Anyone may leave.
	if res := f.viewer.post("/o/acme/leave", nil, false); res.status != 303 {
		t.Fatalf("viewer leaves: %d", res.status)
	}
	if res := f.viewer.api("GET", "/api/v1/orgs/acme", nil); res.status != 404 {
		t.Fatalf("after leaving: %d", res.status)
	}
}

func TestOrganizationsAndWorkspaces(t *testing.T) {
	f := newFixture(t)
	// Create a second organization and switch between them.
	res := f.admin.post("/orgs", url.Values{"name": {"Side Project"}}, false)
	if res.status != 303 || res.header.Get("Location") != "/o/side-project" {
		t.Fatalf("create org: %d %q", res.status, res.header.Get("Location"))
	}
	page := f.admin.get("/o/side-project/w/default")
	if !strings.Contains(page.body, `data-testid="switch-org-acme"`) || !strings.Contains(page.body, `data-testid="switch-org-side-project"`) {
		t.Fatal("the organization switcher lacks an organization")
	}
	if res := f.admin.get("/"); res.header.Get("Location") != "/o/side-project" {
		t.Fatalf("home opens the last organization, got %q", res.header.Get("Location"))
	}
	if res := f.admin.api("POST", "/api/v1/orgs", map[string]any{"name": "Other", "slug": "side-project"}); res.status != 422 || !strings.Contains(res.body, "taken") {
		t.Fatalf("taken slug: %d %s", res.status, res.body)
	}
	// Rename keeps the form's values on error and changes URLs on success.
	res = f.owner.post("/o/acme/settings", url.Values{"name": {"Acme <Corp>"}, "slug": {"acme"}}, true)
	if res.status != 422 || !strings.Contains(res.body, "Acme &lt;Corp&gt;") || !strings.Contains(res.body, "Use letters, digits") {
		t.Fatalf("bad rename: %d %s", res.status, excerpt(res.body))
	}
	long := strings.Repeat("a", 81)
	if res := f.owner.api("PATCH", "/api/v1/orgs/acme", map[string]any{"name": long}); res.status != 422 || !strings.Contains(res.body, "at most 80") {
		t.Fatalf("long name: %d %s", res.status, res.body)
	}

	// Workspaces: create with a derived slug, refuse duplicates, rename, delete with typed confirmation.
	res = f.admin.post("/o/acme/workspaces", url.Values{"name": {"Data Team"}}, true)
	if res.header.Get("HX-Redirect") != "/o/acme/w/data-team" {
		t.Fatalf("create workspace: %d %q %s", res.status, res.header.Get("HX-Redirect"), excerpt(res.body))
	}
	res = f.admin.post("/o/acme/workspaces", url.Values{"name": {"data team"}, "slug": {"other"}}, true)
	if res.status != 422 || !strings.Contains(res.body, "A workspace with this name exists.") {
		t.Fatalf("duplicate workspace name: %d %s", res.status, excerpt(res.body))
	}
	if res := f.admin.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Another", "slug": "data-team"}); res.status != 422 || !strings.Contains(res.body, `"slug"`) {
		t.Fatalf("duplicate workspace slug: %d %s", res.status, res.body)
	}
	res = f.admin.post("/o/acme/w/data-team/settings", url.Values{"name": {"Data"}, "slug": {"data"}}, false)
	if res.header.Get("Location") != "/o/acme/w/data/settings" {
		t.Fatalf("rename workspace: %d %q", res.status, res.header.Get("Location"))
	}
	res = f.admin.post("/o/acme/w/data/delete", url.Values{"confirm": {"Data"}}, true)
	if res.status != 422 || !strings.Contains(res.body, "Type data to confirm.") {
		t.Fatalf("delete without the exact slug: %d %s", res.status, excerpt(res.body))
	}
	res = f.admin.post("/o/acme/w/data/delete", url.Values{"confirm": {"data"}}, false)
	if res.status != 303 || f.admin.get("/o/acme/w/data").status != 404 {
		t.Fatalf("delete workspace: %d", res.status)
	}
	// The same names in another organization do not collide.
	if res := f.outsider.api("POST", "/api/v1/orgs/globex/workspaces", map[string]any{"name": "Data"}); res.status != 201 {
		t.Fatalf("same name in another org: %d %s", res.status, res.body)
	}
}

func TestPersonalAccessTokens(t *testing.T) {
	f := newFixture(t)
	// Created in the console and shown exactly once.
	res := f.member.post("/settings/tokens", url.Values{"name": {"ci"}, "expires_in_days": {"30"}}, false)
	if res.status != 303 {
		t.Fatalf("create token: %d %s", res.status, excerpt(res.body))
	}
	page := f.member.get("/settings/tokens")
	start := strings.Index(page.body, `data-testid="token-value">`)
	if start < 0 {
		t.Fatal("the new token is not shown")
	}
	value := page.body[start+len(`data-testid="token-value">`):]
	value = value[:strings.IndexByte(value, '<')]
	if !strings.HasPrefix(value, "tgp_") {
		t.Fatalf("token value %q", value)
	}
	if again := f.member.get("/settings/tokens"); strings.Contains(again.body, value) {
		t.Fatal("the token was shown twice")
	}
	bearer := &client{e: f.env, http: http.DefaultClient, token: value}
	var me struct{ Email string }
	bearer.api("GET", "/api/v1/me", nil).json(t, &me)
	if me.Email != "member@acme.test" {
		t.Fatalf("token acts as %q", me.Email)
	}
	// Token requests need no CSRF token; they still respect roles.
	if res := bearer.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "X"}); res.status != 403 {
		t.Fatalf("member token creates workspace: %d", res.status)
	}
	var list struct {
		Data []struct {
			ID         int64
			Prefix     string
			LastUsedAt *string `json:"last_used_at"`
			ExpiresAt  *string `json:"expires_at"`
		}
	}
	bearer.api("GET", "/api/v1/me/tokens", nil).json(t, &list)
	if len(list.Data) != 1 || list.Data[0].LastUsedAt == nil || list.Data[0].ExpiresAt == nil || !strings.HasPrefix(value, list.Data[0].Prefix) {
		t.Fatalf("token list: %+v", list)
	}
	if strings.Contains(bearer.api("GET", "/api/v1/me/tokens", nil).body, value) {
		t.Fatal("the token list exposes the token")
	}
	// Revoked: 401 at once, with WWW-Authenticate.
	if res := f.member.post("/settings/tokens/"+itoa(list.Data[0].ID)+"/revoke", nil, false); res.status != 303 {
		t.Fatalf("revoke: %d", res.status)
	}
	if res := bearer.api("GET", "/api/v1/me", nil); res.status != 401 || !strings.Contains(res.header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("revoked token: %d %q", res.status, res.header.Get("WWW-Authenticate"))
	}
	// Expired: 401.
	expiring := tokenClient(t, f.env, "viewer@acme.test")
	if _, err := f.store.Pool().Exec(context.Background(), `UPDATE personal_access_tokens SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if res := expiring.api("GET", "/api/v1/me", nil); res.status != 401 {
		t.Fatalf("expired token: %d", res.status)
	}
	// Malformed credentials: 401 even with a valid session cookie alongside.
	for _, h := range []string{"Bearer tgp_nope", "Basic Zm9vOmJhcg==", "Bearer "} {
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/me", nil)
		req.Header.Set("Authorization", h)
		res, err := f.member.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Errorf("Authorization %q: %d", h, res.StatusCode)
		}
	}
	if strings.Contains(logsOf(t), value) {
		t.Fatal("a token reached the log")
	}
}

func TestAPIRefusesMalformedBodies(t *testing.T) {
	f := newFixture(t)
	tok := tokenClient(t, f.env, "owner@acme.test")
	cases := []struct {
		name, body, contentType string
		want                    int
		code                    string
	}{
		{"unknown field", `{"name":"X","colour":"red"}`, "application/json", 400, "bad_request"},
		{"not JSON", `{"name":`, "application/json", 400, "bad_request"},
		{"wrong type", `{"name":42}`, "application/json", 400, "bad_request"},
		{"trailing data", `{"name":"X"} {}`, "application/json", 400, "bad_request"},
		{"empty", ``, "application/json", 400, "bad_request"},
		{"form instead of JSON", `name=X`, "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
		{"too large", `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, "application/json", 413, "too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := tok.do("POST", "/api/v1/orgs/acme/workspaces", strings.NewReader(tc.body), tc.contentType, false)
			if res.status != tc.want || !strings.Contains(res.body, `"code":"`+tc.code+`"`) {
				t.Fatalf("status %d body %s, want %d %s", res.status, excerpt(res.body), tc.want, tc.code)
			}
		})
	}
	var ws struct{ Data []struct{ Slug string } }
	tok.api("GET", "/api/v1/orgs/acme/workspaces", nil).json(t, &ws)
	if len(ws.Data) != 1 {
		t.Fatalf("a malformed request created a workspace: %+v", ws)
	}
}

func TestStaticAssetsAreFingerprintedAndCached(t *testing.T) {
	e := newEnv(t, nil)
	page := e.anon().get("/signup")
	i := strings.Index(page.body, `/static/css/app.`)
	if i < 0 {
		t.Fatal("no stylesheet link")
	}
	href := page.body[i : i+strings.IndexByte(page.body[i:], '"')]
	res := e.anon().get(href)
	if res.status != 200 || !strings.Contains(res.header.Get("Cache-Control"), "immutable") || !strings.Contains(res.header.Get("Content-Type"), "text/css") {
		t.Fatalf("%s: %d %v", href, res.status, res.header)
	}
	if res := e.anon().get("/static/css/app.0000000000.css"); res.status != 404 {
		t.Fatalf("stale fingerprint: %d", res.status)
	}
}

func TestAPIWritesWithoutCredentialsAre401AndPasswordGuessesThrottle(t *testing.T) {
	f := newFixture(t)
	bare := &client{e: f.env, http: http.DefaultClient}
	for _, method := range []string{"POST", "PATCH", "DELETE", "PUT"} {
		if res := bare.api(method, "/api/v1/orgs/acme", map[string]any{}); res.status != 401 {
			t.Errorf("anonymous %s: %d %s", method, res.status, res.body)
		}
	}
	// A session without the CSRF header is refused.
	req, _ := http.NewRequest("POST", f.srv.URL+"/api/v1/orgs", strings.NewReader(`{"name":"X"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := f.owner.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("session API write without CSRF header: %d", res.StatusCode)
	}
	// Guessing the current password through a stolen token stops after five tries.
	tok := tokenClient(t, f.env, "member@acme.test")
	for i := 0; i < 5; i++ {
		if res := tok.api("PUT", "/api/v1/me/password", map[string]any{"current_password": "guess number " + itoa(int64(i)), "new_password": "a new password 123"}); res.status != 422 {
			t.Fatalf("guess %d: %d %s", i, res.status, res.body)
		}
	}
	res2 := tok.api("PUT", "/api/v1/me/password", map[string]any{"current_password": password, "new_password": "a new password 123"})
	if res2.status != 429 || !strings.Contains(res2.body, "rate_limited") || res2.header.Get("Retry-After") == "" {
		t.Fatalf("after five guesses: %d %s", res2.status, res2.body)
	}
}

func TestChangePassword(t *testing.T) {
	f := newFixture(t)
	res := f.viewer.post("/settings/password", url.Values{"current_password": {password}, "new_password": {"a brand new password"}, "confirm_password": {"a different one!!"}}, true)
	if res.status != 422 || !strings.Contains(res.body, "The two new passwords differ.") {
		t.Fatalf("mismatch: %d %s", res.status, excerpt(res.body))
	}
	res = f.viewer.post("/settings/password", url.Values{"current_password": {password}, "new_password": {"a brand new password"}, "confirm_password": {"a brand new password"}}, false)
	if res.status != 303 {
		t.Fatalf("change: %d %s", res.status, excerpt(res.body))
	}
	if res := f.anon.post("/signin", url.Values{"email": {"viewer@acme.test"}, "password": {password}}, false); res.status != 401 {
		t.Fatalf("old password still works: %d", res.status)
	}
	if res := f.env.anon().post("/signin", url.Values{"email": {"viewer@acme.test"}, "password": {"a brand new password"}}, false); res.status != 303 {
		t.Fatalf("new password: %d", res.status)
	}
	if res := f.viewer.api("PATCH", "/api/v1/me", map[string]any{"email": "owner@acme.test"}); res.status != 422 || !strings.Contains(res.body, "Another account uses this email.") {
		t.Fatalf("taken email: %d %s", res.status, res.body)
	}
	if strings.Contains(logsOf(t), "a brand new password") {
		t.Fatal("a password reached the log")
	}
}

// TestChangePasswordEndsOtherSessions: a password change, in the console
// or through the API, signs the account out of every other browser; the
// session that made the change stays, and personal access tokens, which
// have their own revocation, keep working. A session of another account is
// untouched.
func TestChangePasswordEndsOtherSessions(t *testing.T) {
	f := newFixture(t)
	other := f.env.signIn("viewer@acme.test")
	token := tokenClient(t, f.env, "viewer@acme.test")
	owner := f.env.signIn("owner@acme.test")
	res := f.viewer.post("/settings/password", url.Values{"current_password": {password}, "new_password": {"a brand new password"}, "confirm_password": {"a brand new password"}}, false)
	if res.status != 303 {
		t.Fatalf("change: %d %s", res.status, excerpt(res.body))
	}
	if page := f.viewer.get("/settings/profile"); page.status != 200 || !strings.Contains(page.body, "Password changed. Your other sessions are signed out.") {
		t.Fatalf("the session that changed it: %d %s", page.status, excerpt(page.body))
	}
	if res := other.api("GET", "/api/v1/me", nil); res.status != 401 {
		t.Fatalf("another session of the account after the change: %d %s", res.status, res.body)
	}
	if res := other.get("/o/acme"); res.status != 303 || !strings.HasPrefix(res.header.Get("Location"), "/signin") {
		t.Fatalf("another session's console page: %d %q", res.status, res.header.Get("Location"))
	}
	for name, c := range map[string]*client{"the token": token, "another account": owner} {
		if res := c.api("GET", "/api/v1/me", nil); res.status != 200 {
			t.Fatalf("%s after the change: %d %s", name, res.status, res.body)
		}
	}

	// Through the API, from a session: the same.
	signIn := func() *client {
		c := f.env.anon()
		if res := c.post("/signin", url.Values{"email": {"viewer@acme.test"}, "password": {"a brand new password"}}, false); res.status != 303 {
			t.Fatalf("sign in: %d", res.status)
		}
		return c
	}
	a, b := signIn(), signIn()
	if res := a.api("PUT", "/api/v1/me/password", map[string]any{"current_password": "a brand new password", "new_password": "another new password"}); res.status != 204 {
		t.Fatalf("API change: %d %s", res.status, res.body)
	}
	if res := a.api("GET", "/api/v1/me", nil); res.status != 200 {
		t.Fatalf("the session that changed it through the API: %d %s", res.status, res.body)
	}
	if res := b.api("GET", "/api/v1/me", nil); res.status != 401 {
		t.Fatalf("another session after the API change: %d %s", res.status, res.body)
	}
}

// TestSignOutOtherSessions: the Sessions card on the profile page, and
// DELETE /api/v1/me/sessions, end the account's other console sessions
// and keep the one asking; with a token, every session ends and the token
// keeps working.
func TestSignOutOtherSessions(t *testing.T) {
	f := newFixture(t)
	other := f.env.signIn("viewer@acme.test")
	token := tokenClient(t, f.env, "viewer@acme.test")
	if page := f.viewer.get("/settings/profile"); !strings.Contains(page.body, `data-testid="sign-out-others"`) {
		t.Fatalf("the profile page has no sign-out form: %s", excerpt(page.body))
	}
	// A form posted from another site carries the cookie but no token.
	forged, err := http.NewRequest("POST", f.env.srv.URL+"/settings/sessions/sign-out-others", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	forged.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := f.viewer.http.Do(forged); err != nil || resp.StatusCode != 403 {
		t.Fatalf("without the CSRF token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if res := other.api("GET", "/api/v1/me", nil); res.status != 200 {
		t.Fatalf("another session after a forged request: %d %s", res.status, res.body)
	}
	res := f.viewer.post("/settings/sessions/sign-out-others", url.Values{}, false)
	if res.status != 303 || res.header.Get("Location") != "/settings/profile" {
		t.Fatalf("sign out others: %d %q", res.status, res.header.Get("Location"))
	}
	if page := f.viewer.get("/settings/profile"); page.status != 200 || !strings.Contains(page.body, "Signed out of every other session.") {
		t.Fatalf("the session that asked: %d %s", page.status, excerpt(page.body))
	}
	if res := other.api("GET", "/api/v1/me", nil); res.status != 401 {
		t.Fatalf("another session: %d %s", res.status, res.body)
	}
	if res := f.owner.api("GET", "/api/v1/me", nil); res.status != 200 {
		t.Fatalf("another account's session: %d %s", res.status, res.body)
	}

	a, b := f.env.signIn("viewer@acme.test"), f.env.signIn("viewer@acme.test")
	if res := a.api("DELETE", "/api/v1/me/sessions", nil); res.status != 204 {
		t.Fatalf("API, from a session: %d %s", res.status, res.body)
	}
	if res := a.api("GET", "/api/v1/me", nil); res.status != 200 {
		t.Fatalf("the session that asked through the API: %d %s", res.status, res.body)
	}
	if res := b.api("GET", "/api/v1/me", nil); res.status != 401 {
		t.Fatalf("another session after the API call: %d %s", res.status, res.body)
	}
	if res := token.api("DELETE", "/api/v1/me/sessions", nil); res.status != 204 {
		t.Fatalf("API, with a token: %d %s", res.status, res.body)
	}
	for name, c := range map[string]*client{"the last session": a, "the viewer's own first session": f.viewer} {
		if res := c.api("GET", "/api/v1/me", nil); res.status != 401 {
			t.Fatalf("%s after a token's call: %d %s", name, res.status, res.body)
		}
	}
	if res := token.api("GET", "/api/v1/me", nil); res.status != 200 {
		t.Fatalf("the token: %d %s", res.status, res.body)
	}

	// A token request that also carries a session cookie keeps no session:
	// the cookie's session ends with the others.
	browser := f.env.signIn("viewer@acme.test")
	both := &client{e: browser.e, http: browser.http, token: token.token}
	if res := both.api("DELETE", "/api/v1/me/sessions", nil); res.status != 204 {
		t.Fatalf("API, with a token and a cookie: %d %s", res.status, res.body)
	}
	if res := browser.api("GET", "/api/v1/me", nil); res.status != 401 {
		t.Fatalf("the cookie sent beside the token: %d %s", res.status, res.body)
	}
}
