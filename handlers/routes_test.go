package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// fixture is Acme with one member of each role, and an outsider who owns Globex.
type fixture struct {
	*env
	owner, admin, member, viewer, outsider, anon *client
}

func newFixture(t testing.TB, vars ...map[string]string) *fixture {
	var v map[string]string
	if len(vars) > 0 {
		v = vars[0]
	}
	e := newEnv(t, v)
	e.account("owner@acme.test", "Acme")
	for _, r := range []string{"admin", "member", "viewer"} {
		e.join(e.account(r+"@acme.test", ""), "acme", r)
	}
	e.account("outsider@globex.test", "Globex")
	return &fixture{env: e,
		owner: e.signIn("owner@acme.test"), admin: e.signIn("admin@acme.test"),
		member: e.signIn("member@acme.test"), viewer: e.signIn("viewer@acme.test"),
		outsider: e.signIn("outsider@globex.test"), anon: e.anon()}
}

func (f *fixture) as(who string) *client {
	return map[string]*client{"owner": f.owner, "admin": f.admin, "member": f.member, "viewer": f.viewer,
		"outsider": f.outsider, "anonymous": f.anon}[who]
}

// scenario is one request through the real router.
type scenario struct {
	name         string
	as           string
	method       string
	path         string
	form         url.Values
	htmx         bool
	wantStatus   int
	wantContains []string
}

func (f *fixture) run(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name+"/"+sc.as, func(t *testing.T) {
			c := f.as(sc.as)
			var res response
			if sc.method == http.MethodPost {
				res = c.post(sc.path, sc.form, sc.htmx)
			} else {
				res = c.do(sc.method, sc.path, nil, "", sc.htmx)
			}
			if res.status != sc.wantStatus {
				t.Fatalf("%s %s as %s: status %d, want %d\n%s", sc.method, sc.path, sc.as, res.status, sc.wantStatus, excerpt(res.body))
			}
			for _, want := range sc.wantContains {
				if !strings.Contains(res.body, want) && !strings.Contains(res.header.Get("Location"), want) && !strings.Contains(res.header.Get("HX-Redirect"), want) {
					t.Errorf("%s %s as %s: body lacks %q\n%s", sc.method, sc.path, sc.as, want, excerpt(res.body))
				}
			}
		})
	}
}

func excerpt(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// each expands one request into a scenario per caller with the expected status.
func each(name, method, path string, form url.Values, want map[string]int, contains ...string) []scenario {
	var out []scenario
	for _, who := range []string{"owner", "admin", "member", "viewer", "outsider", "anonymous"} {
		status, ok := want[who]
		if !ok {
			continue
		}
		sc := scenario{name: name, as: who, method: method, path: path, form: form, wantStatus: status}
		if status < 300 || status == http.StatusUnprocessableEntity {
			sc.wantContains = contains
		}
		if who == "anonymous" && status == http.StatusSeeOther {
			sc.wantContains = []string{"/signin"}
		}
		out = append(out, sc)
	}
	return out
}

// Shorthands for the expected statuses of the six callers.
func readable(status int) map[string]int {
	return map[string]int{"owner": status, "admin": status, "member": status, "viewer": status, "outsider": 404, "anonymous": 303}
}

func adminOnly(status int) map[string]int {
	return map[string]int{"owner": status, "admin": status, "member": 403, "viewer": 403, "outsider": 404, "anonymous": 303}
}

func signedIn(status int) map[string]int {
	return map[string]int{"owner": status, "admin": status, "member": status, "viewer": status, "outsider": status, "anonymous": 303}
}

// TestConsoleRoutesByRole walks every console route as owner, admin, member,
// viewer, outsider and anonymous. Writes use input the server refuses (422)
// so one fixture serves the whole table; the role gate answers first.
func TestConsoleRoutesByRole(t *testing.T) {
	f := newFixture(t)
	empty := url.Values{"name": {""}, "slug": {"Bad Slug!"}}
	var sc []scenario
	sc = append(sc, each("home", "GET", "/", nil, signedIn(303))...)
	sc = append(sc, each("orgs", "GET", "/orgs", nil, signedIn(200), "Organizations")...)
	sc = append(sc, each("new org page", "GET", "/orgs/new", nil, signedIn(200), "New organization")...)
	sc = append(sc, each("create org invalid", "POST", "/orgs", empty, signedIn(422), "Enter a name.")...)
	sc = append(sc, each("profile", "GET", "/settings/profile", nil, signedIn(200), "Account settings")...)
	sc = append(sc, each("profile invalid", "POST", "/settings/profile", url.Values{"email": {"not-an-email"}}, signedIn(422), "Enter an email address like")...)
	sc = append(sc, each("password wrong", "POST", "/settings/password", url.Values{"current_password": {"nope"}, "new_password": {"short"}}, signedIn(422), "Use at least 10 characters.")...)
	sc = append(sc, each("tokens", "GET", "/settings/tokens", nil, signedIn(200), "Personal access tokens")...)
	sc = append(sc, each("token invalid", "POST", "/settings/tokens", url.Values{"name": {"<script>"}, "expires_in_days": {"9999"}}, signedIn(422), "Use letters, digits")...)
	sc = append(sc, each("revoke unknown token", "POST", "/settings/tokens/999999/revoke", nil, signedIn(404))...)
	sc = append(sc, each("org home", "GET", "/o/acme", nil, readable(303), "/o/acme/w/default")...)
	sc = append(sc, each("org settings", "GET", "/o/acme/settings", nil, readable(200), "Organization settings")...)
	sc = append(sc, each("org rename invalid", "POST", "/o/acme/settings", empty, adminOnly(422), "Enter a name.")...)
	sc = append(sc, each("members", "GET", "/o/acme/members", nil, readable(200), "owner@acme.test", "viewer@acme.test")...)
	sc = append(sc, each("invite invalid", "POST", "/o/acme/invitations", url.Values{"email": {"x"}, "role": {"king"}}, adminOnly(422), "Choose owner, admin")...)
	sc = append(sc, each("revoke unknown invitation", "POST", "/o/acme/invitations/999999/revoke", nil, adminOnly(404))...)
	sc = append(sc, each("role invalid", "POST", "/o/acme/members/1/role", url.Values{"role": {"king"}}, adminOnly(303))...)
	sc = append(sc, each("remove unknown member", "POST", "/o/acme/members/999999/remove", nil, adminOnly(404))...)
	sc = append(sc, each("workspaces", "GET", "/o/acme/workspaces", nil, readable(200), "Default")...)
	sc = append(sc, each("new workspace page", "GET", "/o/acme/workspaces/new", nil, adminOnly(200), "New workspace")...)
	sc = append(sc, each("create workspace invalid", "POST", "/o/acme/workspaces", empty, adminOnly(422), "Use lowercase letters")...)
	sc = append(sc, each("workspace home", "GET", "/o/acme/w/default", nil, readable(200), "Default", "Sources")...)
	sc = append(sc, each("workspace settings", "GET", "/o/acme/w/default/settings", nil, readable(200), "Workspace settings")...)
	sc = append(sc, each("workspace rename invalid", "POST", "/o/acme/w/default/settings", empty, adminOnly(422), "Enter a name.")...)
	sc = append(sc, each("workspace delete unconfirmed", "POST", "/o/acme/w/default/delete", url.Values{"confirm": {"nope"}}, adminOnly(422), "Type default to confirm.")...)
	sc = append(sc, each("policies", "GET", "/o/acme/w/default/policies", nil, readable(200), "Workspace rules", "Simulator")...)
	sc = append(sc, each("org policies", "GET", "/o/acme/policies", nil, readable(200), "Organization rules", "Simulator")...)
	sc = append(sc, each("new policy page", "GET", "/o/acme/w/default/policies/new", nil, adminOnly(200), "New rule")...)
	sc = append(sc, each("new org policy page", "GET", "/o/acme/policies/new", nil, adminOnly(200), "New rule")...)
	badRule := url.Values{"target_type": {"robots"}, "selector_type": {"all"}, "effect": {"deny"}}
	sc = append(sc, each("create policy invalid", "POST", "/o/acme/w/default/policies", badRule, adminOnly(422), "Choose everyone")...)
	sc = append(sc, each("create org policy invalid", "POST", "/o/acme/policies", badRule, adminOnly(422), "Choose everyone")...)
	sc = append(sc, each("check condition", "POST", "/o/acme/w/default/policies/check", url.Values{"condition": {"1 +"}}, adminOnly(200), "condition-error")...)
	sc = append(sc, each("edit unknown policy", "GET", "/o/acme/w/default/policies/999999/edit", nil, adminOnly(404))...)
	sc = append(sc, each("update unknown policy", "POST", "/o/acme/w/default/policies/999999", badRule, adminOnly(404))...)
	sc = append(sc, each("move unknown policy", "POST", "/o/acme/policies/999999/move", url.Values{"direction": {"up"}}, adminOnly(404))...)
	sc = append(sc, each("toggle unknown policy", "POST", "/o/acme/w/default/policies/999999/enabled", url.Values{"enabled": {"false"}}, adminOnly(404))...)
	sc = append(sc, each("delete unknown policy", "POST", "/o/acme/policies/999999/delete", nil, adminOnly(404))...)
	sc = append(sc, each("simulate invalid", "POST", "/o/acme/w/default/policies/simulate", url.Values{"path": {""}}, readable(422), "Choose who calls")...)
	sc = append(sc, each("org simulate invalid", "POST", "/o/acme/policies/simulate", url.Values{"path": {""}}, readable(422), "Choose the workspace")...)
	sc = append(sc, each("approvals", "GET", "/o/acme/w/default/approvals", nil, readable(200), "Approvals", "Nothing waits for a decision")...)
	sc = append(sc, each("approvals bad status", "GET", "/o/acme/w/default/approvals?status=nope", nil, readable(400))...)
	sc = append(sc, each("approvals badge", "GET", "/o/acme/w/default/approvals/badge", nil, readable(200), `data-testid="pending-badge"`)...)
	sc = append(sc, each("unknown approval", "GET", "/o/acme/w/default/approvals/apr_nothing", nil, readable(404))...)
	sc = append(sc, each("approve unknown", "POST", "/o/acme/w/default/approvals/apr_nothing/approve", nil,
		map[string]int{"owner": 404, "admin": 404, "member": 404, "viewer": 403, "outsider": 404, "anonymous": 303})...)
	sc = append(sc, each("deny unknown", "POST", "/o/acme/w/default/approvals/apr_nothing/deny", nil,
		map[string]int{"owner": 404, "admin": 404, "member": 404, "viewer": 403, "outsider": 404, "anonymous": 303})...)
	sc = append(sc, each("add approver invalid", "POST", "/o/acme/w/default/approvers", url.Values{"user_id": {""}}, adminOnly(422), "Choose a member")...)
	sc = append(sc, each("remove unknown approver", "POST", "/o/acme/w/default/approvers/999999/remove", nil, adminOnly(404))...)
	sc = append(sc, each("unknown section", "GET", "/o/acme/w/default/nothing", nil, readable(404))...)
	sc = append(sc, each("unknown workspace", "GET", "/o/acme/w/nope", nil, readable(404))...)
	sc = append(sc, each("signin page signed in", "GET", "/signin", nil, map[string]int{"owner": 303, "anonymous": 200})...)
	sc = append(sc, each("signup page", "GET", "/signup", nil, map[string]int{"anonymous": 200}, "Sign-up is closed", "invitation")...)
	sc = append(sc, each("signup closed by invite mode", "POST", "/signup", url.Values{"email": {"new@x.test"}, "password": {password}, "org_name": {"New"}}, map[string]int{"anonymous": 403})...)
	sc = append(sc, each("bad invitation link", "GET", "/invitations/tgi_nothing", nil, map[string]int{"owner": 404, "anonymous": 404})...)
	sc = append(sc, each("accept bad invitation", "POST", "/invitations/tgi_nothing", nil, map[string]int{"owner": 404, "anonymous": 303})...)
	sc = append(sc, each("leave as last owner", "POST", "/o/acme/leave", nil, map[string]int{"owner": 303, "outsider": 404, "anonymous": 303}, "/o/acme/settings")...)
	sc = append(sc, each("healthz", "GET", "/healthz", nil, map[string]int{"anonymous": 200}, `"ok"`)...)
	sc = append(sc, each("readyz", "GET", "/readyz", nil, map[string]int{"anonymous": 200}, `"postgresql":"ok"`)...)
	sc = append(sc, each("unknown page", "GET", "/nope", nil, map[string]int{"owner": 404, "anonymous": 404}, "Page not found")...)
	f.run(t, sc)

	// The table left every member in place.
	if res := f.owner.get("/o/acme/members"); !strings.Contains(res.body, "member@acme.test") {
		t.Fatal("a member vanished")
	}
}

// TestAPIRoutesByRole walks every /api/v1 route as each caller.
func TestAPIRoutesByRole(t *testing.T) {
	f := newFixture(t)
	type apiCase struct {
		name, method, path string
		body               any
		want               map[string]int
	}
	bad := map[string]any{"name": "", "slug": "Bad!"}
	apiReadable := func(s int) map[string]int {
		return map[string]int{"owner": s, "admin": s, "member": s, "viewer": s, "outsider": 404, "anonymous": 401}
	}
	apiAdmin := func(s int) map[string]int {
		return map[string]int{"owner": s, "admin": s, "member": 403, "viewer": 403, "outsider": 404, "anonymous": 401}
	}
	apiSigned := func(s int) map[string]int {
		return map[string]int{"owner": s, "admin": s, "member": s, "viewer": s, "outsider": s, "anonymous": 401}
	}
	cases := []apiCase{
		{"me", "GET", "/api/v1/me", nil, apiSigned(200)},
		{"update me invalid", "PATCH", "/api/v1/me", map[string]any{"email": "nope"}, apiSigned(422)},
		{"password invalid", "PUT", "/api/v1/me/password", map[string]any{"current_password": "x", "new_password": "y"}, apiSigned(422)},
		{"tokens", "GET", "/api/v1/me/tokens", nil, apiSigned(200)},
		{"token invalid", "POST", "/api/v1/me/tokens", map[string]any{"name": ""}, apiSigned(422)},
		{"revoke unknown token", "DELETE", "/api/v1/me/tokens/999999", nil, apiSigned(404)},
		{"accept bad invitation", "POST", "/api/v1/invitations/accept", map[string]any{"token": "tgi_x"}, apiSigned(404)},
		{"orgs", "GET", "/api/v1/orgs", nil, apiSigned(200)},
		{"create org invalid", "POST", "/api/v1/orgs", bad, apiSigned(422)},
		{"org", "GET", "/api/v1/orgs/acme", nil, apiReadable(200)},
		{"update org invalid", "PATCH", "/api/v1/orgs/acme", bad, apiAdmin(422)},
		{"members", "GET", "/api/v1/orgs/acme/members", nil, apiReadable(200)},
		{"change role invalid", "PATCH", "/api/v1/orgs/acme/members/1", map[string]any{"role": "king"}, apiAdmin(422)},
		{"remove unknown member", "DELETE", "/api/v1/orgs/acme/members/999999", nil, apiReadable(404)},
		{"invitations", "GET", "/api/v1/orgs/acme/invitations", nil, apiAdmin(200)},
		{"invite invalid", "POST", "/api/v1/orgs/acme/invitations", map[string]any{"email": "x", "role": "member"}, apiAdmin(422)},
		{"revoke unknown invitation", "DELETE", "/api/v1/orgs/acme/invitations/999999", nil, apiAdmin(404)},
		{"workspaces", "GET", "/api/v1/orgs/acme/workspaces", nil, apiReadable(200)},
		{"create workspace invalid", "POST", "/api/v1/orgs/acme/workspaces", bad, apiAdmin(422)},
		{"workspace", "GET", "/api/v1/orgs/acme/workspaces/default", nil, apiReadable(200)},
		{"update workspace invalid", "PATCH", "/api/v1/orgs/acme/workspaces/default", bad, apiAdmin(422)},
		{"delete unknown workspace", "DELETE", "/api/v1/orgs/acme/workspaces/nope", nil, apiReadable(404)},
		{"approvals", "GET", "/api/v1/orgs/acme/workspaces/default/approvals", nil, apiReadable(200)},
		{"approvals bad status", "GET", "/api/v1/orgs/acme/workspaces/default/approvals?status=nope", nil, apiReadable(422)},
		{"unknown approval", "GET", "/api/v1/orgs/acme/workspaces/default/approvals/apr_nothing", nil, apiReadable(404)},
		{"approve unknown", "POST", "/api/v1/orgs/acme/workspaces/default/approvals/apr_nothing/approve", nil,
			map[string]int{"owner": 404, "admin": 404, "member": 404, "viewer": 403, "outsider": 404, "anonymous": 401}},
		{"deny unknown", "POST", "/api/v1/orgs/acme/workspaces/default/approvals/apr_nothing/deny", map[string]any{"comment": "no"},
			map[string]int{"owner": 404, "admin": 404, "member": 404, "viewer": 403, "outsider": 404, "anonymous": 401}},
		{"approvers", "GET", "/api/v1/orgs/acme/workspaces/default/approvers", nil, apiAdmin(200)},
		{"add approver invalid", "PUT", "/api/v1/orgs/acme/workspaces/default/approvers/999999", nil, apiAdmin(422)},
		{"remove unknown approver", "DELETE", "/api/v1/orgs/acme/workspaces/default/approvers/999999", nil, apiAdmin(404)},
		{"policies", "GET", "/api/v1/orgs/acme/workspaces/default/policies", nil, apiReadable(200)},
		{"org policies", "GET", "/api/v1/orgs/acme/policies", nil, apiReadable(200)},
		{"create policy invalid", "POST", "/api/v1/orgs/acme/workspaces/default/policies", map[string]any{"target_type": "robots"}, apiAdmin(422)},
		{"create org policy invalid", "POST", "/api/v1/orgs/acme/policies", map[string]any{"target_type": "robots"}, apiAdmin(422)},
		{"unknown policy", "GET", "/api/v1/orgs/acme/workspaces/default/policies/999999", nil, apiReadable(404)},
		{"unknown org policy", "GET", "/api/v1/orgs/acme/policies/999999", nil, apiReadable(404)},
		{"update unknown policy", "PATCH", "/api/v1/orgs/acme/workspaces/default/policies/999999", map[string]any{"effect": "deny"}, apiAdmin(404)},
		{"update unknown org policy", "PATCH", "/api/v1/orgs/acme/policies/999999", map[string]any{"effect": "deny"}, apiAdmin(404)},
		{"delete unknown policy", "DELETE", "/api/v1/orgs/acme/workspaces/default/policies/999999", nil, apiAdmin(404)},
		{"delete unknown org policy", "DELETE", "/api/v1/orgs/acme/policies/999999", nil, apiAdmin(404)},
		{"move unknown policy", "POST", "/api/v1/orgs/acme/workspaces/default/policies/999999/move", map[string]any{"direction": "up"}, apiAdmin(404)},
		{"move unknown org policy", "POST", "/api/v1/orgs/acme/policies/999999/move", map[string]any{"direction": "up"}, apiAdmin(404)},
		{"simulate invalid", "POST", "/api/v1/orgs/acme/workspaces/default/policies/simulate", map[string]any{"path": ""}, apiReadable(422)},
		{"org simulate invalid", "POST", "/api/v1/orgs/acme/policies/simulate", map[string]any{"path": ""}, apiReadable(422)},
		{"openapi", "GET", "/api/v1/openapi.json", nil, map[string]int{"anonymous": 200}},
	}
	for _, tc := range cases {
		for who, want := range tc.want {
			t.Run(tc.name+"/"+who, func(t *testing.T) {
				res := f.as(who).api(tc.method, tc.path, tc.body)
				if res.status != want {
					t.Fatalf("%s %s as %s: status %d, want %d: %s", tc.method, tc.path, who, res.status, want, excerpt(res.body))
				}
				if want >= 400 {
					var body struct {
						Error struct {
							Code    string            `json:"code"`
							Message string            `json:"message"`
							Fields  map[string]string `json:"fields"`
						} `json:"error"`
					}
					res.json(t, &body)
					if body.Error.Code == "" || body.Error.Message == "" {
						t.Fatalf("error body lacks code or message: %s", res.body)
					}
					if want == 422 && len(body.Error.Fields) == 0 {
						t.Fatalf("422 without fields: %s", res.body)
					}
					if want == 401 && res.header.Get("WWW-Authenticate") == "" {
						t.Fatal("401 without WWW-Authenticate")
					}
				}
			})
		}
	}
}
