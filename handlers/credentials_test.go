package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/sources"
)

// credentialResp is a credential's JSON as the tests read it.
type credentialResp struct {
	ID          string
	SourceID    string `json:"source_id"`
	Scope       string
	Hint        string
	Description string
	Auth        struct {
		Type, Header, Scheme, In, Name, Username string
		Headers                                  []string
	}
	Organization string
	Workspace    *string
	CreatedBy    *string `json:"created_by"`
	UpdatedBy    *string `json:"updated_by"`
	LastUsedAt   *string `json:"last_used_at"`
}

// keySpec is an OpenAPI document whose API expects X-API-Key in a header.
const keySpec = `{"openapi": "3.0.3", "info": {"title": "%s", "version": "1"},
	"servers": [{"url": "https://api.example.test"}],
	"components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}},
	"security": [{"key": []}],
	"paths": {
		"/items": {"get": {"operationId": "listItems", "responses": {"200": {"description": "ok"}}}},
		"/items/{id}": {"get": {"operationId": "getItem", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
			"responses": {"200": {"description": "ok"}}}}}}`

func specOf(title string) json.RawMessage {
	return json.RawMessage(strings.Replace(keySpec, "%s", title, 1))
}

// credFixture is Acme with a second member, a second workspace and three
// sources: one in the default workspace, one of the organization and one
// in the other workspace.
type credFixture struct {
	*fixture
	member2                 *client
	wsSrc, orgSrc, otherSrc sourceResp
	orgID, wsID, otherWSID  int64
}

const (
	credWS    = "/api/v1/orgs/acme/workspaces/default/credentials"
	credOther = "/api/v1/orgs/acme/workspaces/other/credentials"
	credOrg   = "/api/v1/orgs/acme/credentials"
	credMe    = "/api/v1/me/credentials"
	consoleWS = "/o/acme/w/default/credentials"
)

func newCredFixture(t *testing.T) *credFixture {
	t.Helper()
	f := &credFixture{fixture: newFixture(t, peerVars)}
	f.join(f.account("member2@acme.test", ""), "acme", "member")
	f.member2 = f.signIn("member2@acme.test")
	if res := f.owner.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Other", "slug": "other"}); res.status != 201 {
		t.Fatalf("create workspace: %d %s", res.status, res.body)
	}
	f.wsSrc = createSource(t, f.owner, wsSources, map[string]any{"name": "Petstore", "type": "openapi", "config": map[string]any{"spec": specOf("Petstore")}}, 201)
	f.orgSrc = createSource(t, f.owner, "/api/v1/orgs/acme/sources", map[string]any{"name": "Billing", "type": "openapi", "config": map[string]any{"spec": specOf("Billing")}}, 201)
	f.otherSrc = createSource(t, f.owner, "/api/v1/orgs/acme/workspaces/other/sources", map[string]any{"name": "Elsewhere", "type": "openapi", "config": map[string]any{"spec": specOf("Elsewhere")}}, 201)
	ctx := context.Background()
	if err := f.store.Pool().QueryRow(ctx, `SELECT id FROM organizations WHERE slug = 'acme'`).Scan(&f.orgID); err != nil {
		t.Fatal(err)
	}
	for slug, id := range map[string]*int64{"default": &f.wsID, "other": &f.otherWSID} {
		w, err := f.store.WorkspaceBySlug(ctx, f.orgID, slug)
		if err != nil {
			t.Fatal(err)
		}
		*id = w.ID
	}
	return f
}

// userID is the id of a fixture account.
func (f *credFixture) userID(t *testing.T, email string) int64 {
	t.Helper()
	u, err := f.store.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// resolve is what a call of a source from a workspace, made as a user
// (or by no user), would carry: the service's own resolution, decrypted.
func (f *credFixture) resolve(t *testing.T, sourceID string, wsID int64, userID *int64) *sources.Auth {
	t.Helper()
	ctx := context.Background()
	src, err := f.store.Source(ctx, f.orgID, sourceID)
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&credentials.Service{Store: f.store, Ring: f.keys}).Resolve(ctx, src, wsID, userID)
	if err != nil {
		t.Fatalf("resolve %s: %v", sourceID, err)
	}
	if r == nil {
		return nil
	}
	return r.Auth
}

// createCredential posts a credential and decodes the answer.
func createCredential(t *testing.T, c *client, path string, body any, want int) credentialResp {
	t.Helper()
	res := c.api("POST", path, body)
	if res.status != want {
		t.Fatalf("POST %s: %d, want %d: %s", path, res.status, want, excerpt(res.body))
	}
	var cr credentialResp
	if want == http.StatusCreated {
		res.json(t, &cr)
	}
	return cr
}

// sealedFields are the names a sealed value has in the database; no
// answer may carry them.
var sealedFields = regexp.MustCompile(`(?i)"(ciphertext|nonce|key_id|KeyID|Ciphertext|Nonce)"`)

// noSecret fails when a response carries a secret or a sealed field.
func noSecret(t *testing.T, what string, res response, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(res.body, s) {
			t.Errorf("%s: the answer carries a secret (%d): %s", what, res.status, excerpt(res.body))
		}
	}
	if sealedFields.MatchString(res.body) {
		t.Errorf("%s: the answer carries a sealed field: %s", what, excerpt(res.body))
	}
}

func TestCredentialsAPIRoundTripInEveryScope(t *testing.T) {
	f := newCredFixture(t)
	wsCanary, wsCanary2 := "ws-canary-0123456789-AAAA", "ws-canary-0123456789-BBBB"
	orgCanary := "org-canary-0123456789-CCCC"
	meCanary, meCanary2 := "me-canary-0123456789-DDDD", "me-canary-0123456789-EEEE"
	all := []string{wsCanary, wsCanary2, orgCanary, meCanary, meCanary2}
	check := func(what string, res response, want int) response {
		t.Helper()
		if res.status != want {
			t.Fatalf("%s: %d, want %d: %s", what, res.status, want, excerpt(res.body))
		}
		noSecret(t, what, res, all...)
		return res
	}

	// Workspace scope, created in the workspace (the default scope there).
	res := check("create workspace credential", f.owner.api("POST", credWS, map[string]any{"source_id": f.wsSrc.ID,
		"auth": map[string]any{"type": "apiKey", "name": "X-API-Key"}, "secret": map[string]any{"value": wsCanary}}), 201)
	var ws credentialResp
	res.json(t, &ws)
	if !strings.HasPrefix(ws.ID, "cred_") || ws.Scope != "workspace" || ws.SourceID != f.wsSrc.ID || ws.Hint != "…AAAA" ||
		ws.Auth.Type != "apiKey" || ws.Auth.In != "header" || ws.Auth.Name != "X-API-Key" || ws.Description != "X-API-Key header" ||
		ws.Workspace == nil || *ws.Workspace != "default" || ws.CreatedBy == nil || ws.Organization != "acme" {
		t.Fatalf("workspace credential: %+v", ws)
	}
	// Every key of the shape is there, and nothing more about the value.
	var raw map[string]json.RawMessage
	res.json(t, &raw)
	for _, k := range []string{"id", "source_id", "scope", "auth", "hint", "created_at", "updated_at", "last_used_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("credential JSON lacks %q: %s", k, res.body)
		}
	}
	if _, ok := raw["secret"]; ok {
		t.Errorf("credential JSON has a secret key: %s", res.body)
	}
	var authKeys map[string]any
	_ = json.Unmarshal(raw["auth"], &authKeys)
	for _, k := range []string{"type", "header", "scheme", "in", "name", "username", "headers"} {
		if _, ok := authKeys[k]; !ok {
			t.Errorf("auth lacks %q: %s", k, raw["auth"])
		}
	}
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, nil); a == nil || a.Headers["X-Api-Key"] != wsCanary {
		t.Fatalf("the workspace credential does not resolve to its value: %+v", a)
	}
	var listed struct{ Data []credentialResp }
	check("list workspace", f.owner.api("GET", credWS, nil), 200).json(t, &listed)
	if len(listed.Data) != 1 || listed.Data[0].ID != ws.ID {
		t.Fatalf("workspace list: %+v", listed.Data)
	}
	check("get workspace credential", f.owner.api("GET", credWS+"/"+ws.ID, nil), 200)

	// PATCH without a secret keeps the stored one under new parameters.
	var patched credentialResp
	check("patch parameters", f.owner.api("PATCH", credWS+"/"+ws.ID, map[string]any{"auth": map[string]any{"type": "apiKey", "in": "query", "name": "api_key"}}), 200).json(t, &patched)
	if patched.Auth.In != "query" || patched.Auth.Name != "api_key" || patched.Hint != "…AAAA" {
		t.Fatalf("patched: %+v", patched)
	}
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, nil); a == nil || a.Query["api_key"] != wsCanary || len(a.Headers) != 0 {
		t.Fatalf("PATCH without secret lost the value: %+v", a)
	}
	// A new type needs its secret.
	check("type change without secret", f.owner.api("PATCH", credWS+"/"+ws.ID, map[string]any{"auth": map[string]any{"type": "bearer"}}), 422)
	// Replacing the value changes the hint and what calls carry.
	check("replace value", f.owner.api("PATCH", credWS+"/"+ws.ID, map[string]any{"secret": map[string]any{"value": wsCanary2}}), 200).json(t, &patched)
	if patched.Hint != "…BBBB" || patched.UpdatedBy == nil {
		t.Fatalf("replaced: %+v", patched)
	}
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, nil); a == nil || a.Query["api_key"] != wsCanary2 {
		t.Fatalf("replaced value not used: %+v", a)
	}
	// Resolution touched it: last used shows.
	var used credentialResp
	check("get after use", f.owner.api("GET", credWS+"/"+ws.ID, nil), 200).json(t, &used)
	if used.LastUsedAt == nil {
		t.Errorf("last_used_at still null after a call used it")
	}
	// A second credential for the same source and holder is refused.
	check("duplicate", f.owner.api("POST", credWS, map[string]any{"source_id": f.wsSrc.ID,
		"auth": map[string]any{"type": "bearer"}, "secret": map[string]any{"value": wsCanary}}), 422)

	// Organization scope, created in the organization.
	var org credentialResp
	check("create organization credential", f.owner.api("POST", credOrg, map[string]any{"source_id": f.orgSrc.ID,
		"auth": map[string]any{"type": "bearer"}, "secret": map[string]any{"value": orgCanary}}), 201).json(t, &org)
	if org.Scope != "organization" || org.Auth.Header != "Authorization" || org.Auth.Scheme != "Bearer" || org.Workspace != nil || org.Hint != "…CCCC" {
		t.Fatalf("organization credential: %+v", org)
	}
	check("get organization credential", f.owner.api("GET", credOrg+"/"+org.ID, nil), 200)
	// It applies in every workspace: both lists show it.
	for _, p := range []string{credWS, credOther} {
		check("list "+p, f.owner.api("GET", p+"?scope=organization", nil), 200).json(t, &listed)
		if len(listed.Data) != 1 || listed.Data[0].ID != org.ID {
			t.Fatalf("%s?scope=organization: %+v", p, listed.Data)
		}
	}
	check("get organization credential from a workspace", f.owner.api("GET", credWS+"/"+org.ID, nil), 200)
	check("patch organization credential", f.owner.api("PATCH", credOrg+"/"+org.ID, map[string]any{"auth": map[string]any{"type": "bearer", "header": "X-Token"}}), 200).json(t, &org)
	if org.Auth.Header != "X-Token" || org.Auth.Scheme != "" {
		t.Fatalf("patched organization credential: %+v", org)
	}
	if a := f.resolve(t, f.orgSrc.ID, f.otherWSID, nil); a == nil || a.Headers["X-Token"] != orgCanary {
		t.Fatalf("organization credential in the other workspace: %+v", a)
	}
	check("unknown scope", f.owner.api("GET", credOrg+"?scope=everyone", nil), 422)

	// Account scope, created by a member through /me.
	memberID := f.userID(t, "member@acme.test")
	var mine credentialResp
	check("create account credential", f.member.api("POST", credMe, map[string]any{"source_id": f.wsSrc.ID,
		"auth": map[string]any{"type": "basic", "username": "ada"}, "secret": map[string]any{"password": meCanary}}), 201).json(t, &mine)
	if mine.Scope != "account" || mine.Auth.Username != "ada" || mine.Hint != "…DDDD" || mine.Description != "Basic auth as ada" {
		t.Fatalf("account credential: %+v", mine)
	}
	check("list mine", f.member.api("GET", credMe, nil), 200).json(t, &listed)
	if len(listed.Data) != 1 || listed.Data[0].ID != mine.ID {
		t.Fatalf("my credentials: %+v", listed.Data)
	}
	check("get mine", f.member.api("GET", credMe+"/"+mine.ID, nil), 200)
	check("get mine from the workspace", f.member.api("GET", credWS+"/"+mine.ID, nil), 200)
	check("workspace list as its owner", f.member.api("GET", credWS+"?scope=account", nil), 200).json(t, &listed)
	if len(listed.Data) != 1 || listed.Data[0].ID != mine.ID {
		t.Fatalf("member's workspace list: %+v", listed.Data)
	}
	// Calls as the member use theirs first; anybody else's use the workspace's.
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, &memberID); a == nil || !strings.HasPrefix(a.Headers["Authorization"], "Basic ") {
		t.Fatalf("member's call: %+v", a)
	}
	ownerID := f.userID(t, "owner@acme.test")
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, &ownerID); a == nil || a.Query["api_key"] != wsCanary2 {
		t.Fatalf("owner's call used another user's account credential: %+v", a)
	}
	check("patch mine without secret", f.member.api("PATCH", credMe+"/"+mine.ID, map[string]any{"auth": map[string]any{"type": "basic", "username": "grace"}}), 200).json(t, &mine)
	if mine.Auth.Username != "grace" || mine.Hint != "…DDDD" {
		t.Fatalf("patched account credential: %+v", mine)
	}
	check("replace mine with headers", f.member.api("PATCH", credMe+"/"+mine.ID, map[string]any{"auth": map[string]any{"type": "headers"},
		"secret": map[string]any{"headers": map[string]string{"X-Service-Token": meCanary2}}}), 200).json(t, &mine)
	if mine.Auth.Type != "headers" || len(mine.Auth.Headers) != 1 || mine.Auth.Headers[0] != "X-Service-Token" {
		t.Fatalf("headers credential: %+v", mine)
	}
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, &memberID); a == nil || a.Headers["X-Service-Token"] != meCanary2 {
		t.Fatalf("member's call after replace: %+v", a)
	}
	check("scope other than account on /me", f.member.api("POST", credMe, map[string]any{"source_id": f.orgSrc.ID, "scope": "organization",
		"auth": map[string]any{"type": "bearer"}, "secret": map[string]any{"value": meCanary}}), 422)
	check("unknown source on /me", f.member.api("POST", credMe, map[string]any{"source_id": "src_nope",
		"auth": map[string]any{"type": "bearer"}, "secret": map[string]any{"value": meCanary}}), 422)
	check("unknown field", f.member.api("POST", credMe, map[string]any{"source_id": f.orgSrc.ID, "value": meCanary}), 400)

	// Deletes, one per scope.
	for _, p := range []struct {
		c    *client
		path string
	}{{f.owner, credWS + "/" + ws.ID}, {f.owner, credOrg + "/" + org.ID}, {f.member, credMe + "/" + mine.ID}} {
		check("delete "+p.path, p.c.api("DELETE", p.path, nil), 204)
		check("get deleted "+p.path, p.c.api("GET", p.path, nil), 404)
	}
	check("empty list", f.owner.api("GET", credOrg, nil), 200).json(t, &listed)
	if len(listed.Data) != 0 {
		t.Fatalf("credentials left: %+v", listed.Data)
	}
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, &memberID); a != nil {
		t.Fatalf("deleted credentials still resolve: %+v", a)
	}

	// The audit trail names the changes and holds no secret.
	rows, err := f.store.Pool().Query(context.Background(), `SELECT action, details::text FROM audit_events WHERE target_type = 'credential'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	actions := map[string]int{}
	for rows.Next() {
		var action, details string
		if err := rows.Scan(&action, &details); err != nil {
			t.Fatal(err)
		}
		actions[action]++
		for _, s := range all {
			if strings.Contains(details, s) {
				t.Errorf("audit %s carries a secret: %s", action, details)
			}
		}
	}
	if actions["credential.created"] != 3 || actions["credential.deleted"] != 3 || actions["credential.replaced"] < 2 {
		t.Errorf("audit actions: %v", actions)
	}
	if logs := logsOf(t); containsAny(logs, all) {
		t.Errorf("a secret reached the log")
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestCredentialPermissions is the permission table of the issue: a member
// cannot read, use or overwrite another member's account credential, an
// outsider cannot list or fetch credentials by guessing ids, a viewer
// cannot create one, a member cannot create shared ones, and one
// workspace's URLs cannot address another's credential.
func TestCredentialPermissions(t *testing.T) {
	f := newCredFixture(t)
	secret := "perm-canary-0123456789-ZZZZ"
	bearer := func(src string, scope string) map[string]any {
		return map[string]any{"source_id": src, "scope": scope, "auth": map[string]any{"type": "bearer"}, "secret": map[string]any{"value": secret}}
	}
	mine := createCredential(t, f.member, credWS, bearer(f.wsSrc.ID, "account"), 201)
	shared := createCredential(t, f.owner, credWS, bearer(f.wsSrc.ID, "workspace"), 201)
	org := createCredential(t, f.admin, credOrg, bearer(f.orgSrc.ID, "organization"), 201)
	other := createCredential(t, f.owner, credOther, bearer(f.otherSrc.ID, "workspace"), 201)
	outsider := tokenClient(t, f.env, "outsider@globex.test")
	replace := map[string]any{"secret": map[string]any{"value": "overwritten-0123456789"}}

	type apiCase struct {
		name   string
		c      *client
		method string
		path   string
		body   any
		want   int
	}
	cases := []apiCase{
		// Another member's account credential does not exist for anyone else.
		{"member2 gets member's", f.member2, "GET", credWS + "/" + mine.ID, nil, 404},
		{"member2 gets member's from org", f.member2, "GET", credOrg + "/" + mine.ID, nil, 404},
		{"member2 gets member's from /me", f.member2, "GET", credMe + "/" + mine.ID, nil, 404},
		{"member2 overwrites member's", f.member2, "PATCH", credWS + "/" + mine.ID, replace, 404},
		{"member2 overwrites via /me", f.member2, "PATCH", credMe + "/" + mine.ID, replace, 404},
		{"member2 deletes member's", f.member2, "DELETE", credWS + "/" + mine.ID, nil, 404},
		{"member2 tests member's", f.member2, "POST", credWS + "/" + mine.ID + "/test", nil, 404},
		{"owner gets member's", f.owner, "GET", credOrg + "/" + mine.ID, nil, 404},
		{"owner overwrites member's", f.owner, "PATCH", credOrg + "/" + mine.ID, replace, 404},
		{"owner deletes member's", f.owner, "DELETE", credWS + "/" + mine.ID, nil, 404},
		// Outsiders: nothing, however they ask.
		{"outsider lists workspace", outsider, "GET", credWS, nil, 404},
		{"outsider lists org", outsider, "GET", credOrg, nil, 404},
		{"outsider creates", outsider, "POST", credWS, bearer(f.wsSrc.ID, "account"), 404},
		{"outsider creates via /me", outsider, "POST", credMe, bearer(f.wsSrc.ID, "account"), 422},
		{"outsider gets shared", outsider, "GET", credWS + "/" + shared.ID, nil, 404},
		{"outsider guesses in own org", outsider, "GET", "/api/v1/orgs/globex/credentials/" + org.ID, nil, 404},
		{"outsider guesses in own workspace", outsider, "GET", "/api/v1/orgs/globex/workspaces/default/credentials/" + shared.ID, nil, 404},
		{"outsider guesses via /me", outsider, "GET", credMe + "/" + mine.ID, nil, 404},
		{"outsider patches in own org", outsider, "PATCH", "/api/v1/orgs/globex/credentials/" + org.ID, replace, 404},
		{"outsider deletes in own org", outsider, "DELETE", "/api/v1/orgs/globex/credentials/" + org.ID, nil, 404},
		{"outsider tests in own org", outsider, "POST", "/api/v1/orgs/globex/credentials/" + org.ID + "/test", nil, 404},
		// Viewers see metadata only.
		{"viewer lists", f.viewer, "GET", credWS, nil, 200},
		{"viewer gets shared", f.viewer, "GET", credWS + "/" + shared.ID, nil, 200},
		{"viewer creates account", f.viewer, "POST", credWS, bearer(f.orgSrc.ID, "account"), 403},
		{"viewer creates via /me", f.viewer, "POST", credMe, bearer(f.orgSrc.ID, "account"), 403},
		{"viewer creates workspace", f.viewer, "POST", credWS, bearer(f.orgSrc.ID, "workspace"), 403},
		{"viewer patches", f.viewer, "PATCH", credWS + "/" + shared.ID, replace, 403},
		{"viewer deletes", f.viewer, "DELETE", credOrg + "/" + org.ID, nil, 403},
		{"viewer tests", f.viewer, "POST", credWS + "/" + shared.ID + "/test", nil, 403},
		// Members keep their own, not shared ones.
		{"member gets shared", f.member, "GET", credWS + "/" + shared.ID, nil, 200},
		{"member creates workspace", f.member, "POST", credWS, bearer(f.orgSrc.ID, "workspace"), 403},
		{"member creates organization", f.member, "POST", credOrg, bearer(f.orgSrc.ID, "organization"), 403},
		{"member creates organization from workspace", f.member, "POST", credWS, bearer(f.orgSrc.ID, "organization"), 403},
		{"member creates by default scope", f.member, "POST", credWS, map[string]any{"source_id": f.orgSrc.ID, "auth": map[string]any{"type": "none"}}, 403},
		{"member patches shared", f.member, "PATCH", credWS + "/" + shared.ID, replace, 403},
		{"member deletes org", f.member, "DELETE", credOrg + "/" + org.ID, nil, 403},
		{"member tests shared", f.member, "POST", credWS + "/" + shared.ID + "/test", nil, 403},
		{"member2 creates own", f.member2, "POST", credWS, bearer(f.wsSrc.ID, "account"), 201},
		// Workspace A's URLs do not reach workspace B's credentials or sources.
		{"default gets other's", f.owner, "GET", credWS + "/" + other.ID, nil, 404},
		{"default patches other's", f.owner, "PATCH", credWS + "/" + other.ID, replace, 404},
		{"default deletes other's", f.owner, "DELETE", credWS + "/" + other.ID, nil, 404},
		{"default tests other's", f.owner, "POST", credWS + "/" + other.ID + "/test", nil, 404},
		{"other gets default's", f.owner, "GET", credOther + "/" + shared.ID, nil, 404},
		{"default creates for other's source", f.owner, "POST", credWS, bearer(f.otherSrc.ID, "workspace"), 422},
		{"other gets its own", f.owner, "GET", credOther + "/" + other.ID, nil, 200},
		{"workspace scope from the org", f.owner, "POST", credOrg, bearer(f.orgSrc.ID, "workspace"), 422},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.c.api(tc.method, tc.path, tc.body)
			if res.status != tc.want {
				t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, res.status, tc.want, excerpt(res.body))
			}
			noSecret(t, tc.name, res, secret)
		})
	}

	// Lists: nobody sees another's account credential; outsiders' own lists stay empty.
	listIDs := func(c *client, path string) map[string]bool {
		t.Helper()
		var l struct{ Data []credentialResp }
		res := c.api("GET", path, nil)
		if res.status != 200 {
			t.Fatalf("GET %s: %d", path, res.status)
		}
		res.json(t, &l)
		out := map[string]bool{}
		for _, cr := range l.Data {
			out[cr.ID] = true
		}
		return out
	}
	for who, c := range map[string]*client{"owner": f.owner, "admin": f.admin, "member2": f.member2, "viewer": f.viewer} {
		for _, p := range []string{credWS, credOrg, credMe} {
			if listIDs(c, p)[mine.ID] {
				t.Errorf("%s sees member's account credential in %s", who, p)
			}
		}
	}
	if ids := listIDs(f.viewer, credWS); !ids[shared.ID] || !ids[org.ID] || ids[other.ID] {
		t.Errorf("viewer's workspace list: %v", ids)
	}
	if ids := listIDs(f.member, credWS); !ids[mine.ID] || !ids[shared.ID] || !ids[org.ID] || ids[other.ID] {
		t.Errorf("member's workspace list: %v", ids)
	}
	if ids := listIDs(f.owner, credOrg); !ids[shared.ID] || !ids[org.ID] || !ids[other.ID] {
		t.Errorf("owner's organization list: %v", ids)
	}
	if ids := listIDs(outsider, "/api/v1/orgs/globex/credentials"); len(ids) != 0 {
		t.Errorf("outsider sees %v", ids)
	}
	if ids := listIDs(outsider, credMe); len(ids) != 0 {
		t.Errorf("outsider's own list: %v", ids)
	}
	// Nothing was overwritten: the member's call still uses their value.
	memberID := f.userID(t, "member@acme.test")
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, &memberID); a == nil || a.Headers["Authorization"] != "Bearer "+secret {
		t.Fatalf("member's credential changed: %+v", a)
	}
}

// guardedSpec serves keySpec only to requests carrying key in X-API-Key;
// others get 401 with the key they sent echoed back, as careless
// upstreams do.
func guardedSpec(t *testing.T, key string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-API-Key"); got != key {
			http.Error(w, `{"error": "invalid key `+got+`"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(specOf("Guarded"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCredentialsDiscoverTestAndFollowTheirSource: a source whose spec
// needs a key fails until a credential gives it; Test reports the tool
// count, or an error with the secret redacted; deleting the source deletes
// its credentials.
func TestCredentialsDiscoverTestAndFollowTheirSource(t *testing.T) {
	f := newCredFixture(t)
	key, wrong := "guard-canary-0123456789-KEY1", "wrong-canary-0123456789-KEY2"
	srv := guardedSpec(t, key)
	src := createSource(t, f.owner, wsSources, map[string]any{"name": "Guarded", "type": "openapi", "config": map[string]any{"spec": srv.URL + "/spec.json"}}, 201)
	if src.State != "failed" {
		t.Fatalf("a guarded spec without credential: %+v", src)
	}
	cred := createCredential(t, f.owner, credWS, map[string]any{"source_id": src.ID, "auth": map[string]any{"type": "apiKey", "name": "X-API-Key"},
		"secret": map[string]any{"value": key}}, 201)
	// The credential refreshes its source, which now discovers.
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := settle(t, f.owner, wsSources+"/"+src.ID)
		if s.State == "ready" && s.ToolCount == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("source did not discover with its credential: %+v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var tr struct {
		ToolCount int `json:"tool_count"`
		Error     string
	}
	res := f.owner.api("POST", credWS+"/"+cred.ID+"/test", nil)
	noSecret(t, "test", res, key)
	res.json(t, &tr)
	if res.status != 200 || tr.ToolCount != 2 || tr.Error != "" {
		t.Fatalf("test: %d %s", res.status, res.body)
	}
	// A member's wrong key: Test fails and does not repeat the key the
	// upstream echoed.
	mine := createCredential(t, f.member, credMe, map[string]any{"source_id": src.ID, "auth": map[string]any{"type": "apiKey", "name": "X-API-Key"},
		"secret": map[string]any{"value": wrong}}, 201)
	res = f.member.api("POST", credMe+"/"+mine.ID+"/test", nil)
	noSecret(t, "failed test", res, key, wrong)
	res.json(t, &tr)
	if res.status != 200 || tr.Error == "" || tr.ToolCount != 0 {
		t.Fatalf("test with a wrong key: %d %s", res.status, res.body)
	}
	page := f.member.post(consoleWS+"/"+mine.ID+"/test", nil, true)
	if page.status != 200 || !strings.Contains(page.body, `data-testid="test-error"`) {
		t.Fatalf("console test: %d %s", page.status, excerpt(page.body))
	}
	noSecret(t, "console failed test", page, key, wrong)
	page = f.owner.post(consoleWS+"/"+cred.ID+"/test", nil, true)
	if page.status != 200 || !strings.Contains(page.body, "2 tools") {
		t.Fatalf("console test: %d %s", page.status, excerpt(page.body))
	}
	page = f.owner.post(consoleWS+"/"+cred.ID+"/test", nil, false)
	if page.status != 200 || !strings.Contains(page.body, "2 tools") || !strings.Contains(page.body, "Replace the value") {
		t.Fatalf("console test without htmx: %d %s", page.status, excerpt(page.body))
	}

	// Deleting the source deletes its credentials.
	if res := f.owner.api("DELETE", wsSources+"/"+src.ID, nil); res.status != 204 {
		t.Fatalf("delete source: %d %s", res.status, res.body)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		var l struct{ Data []credentialResp }
		f.owner.api("GET", credOrg+"?source_id="+url.QueryEscape(src.ID), nil).json(t, &l)
		var mineLeft struct{ Data []credentialResp }
		f.member.api("GET", credMe, nil).json(t, &mineLeft)
		if len(l.Data) == 0 && len(mineLeft.Data) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("credentials outlived their source: %d shared, %d of the member's", len(l.Data), len(mineLeft.Data))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range []struct {
		c    *client
		path string
	}{{f.owner, credWS + "/" + cred.ID}, {f.member, credMe + "/" + mine.ID}} {
		if res := p.c.api("GET", p.path, nil); res.status != 404 {
			t.Errorf("GET %s after the source's deletion: %d", p.path, res.status)
		}
	}
	if containsAny(logsOf(t), []string{key, wrong}) {
		t.Errorf("a secret reached the log")
	}
}

// credentialURL finds the credential page a console create redirected to.
func credentialURL(t *testing.T, res response) string {
	t.Helper()
	loc := res.header.Get("Location")
	if res.status != http.StatusSeeOther || !regexp.MustCompile(`/credentials/cred_[0-9a-f-]{36}$`).MatchString(loc) {
		t.Fatalf("create: %d to %q: %s", res.status, loc, excerpt(res.body))
	}
	return loc
}

func TestCredentialConsole(t *testing.T) {
	f := newCredFixture(t)
	canary, canary2 := "console-canary-0123456789-QQQQ", "console-canary-0123456789-RRRR"
	shared := createCredential(t, f.owner, credWS, map[string]any{"source_id": f.wsSrc.ID, "auth": map[string]any{"type": "apiKey", "name": "X-API-Key"},
		"secret": map[string]any{"value": canary}}, 201)
	org := createCredential(t, f.owner, credOrg, map[string]any{"source_id": f.orgSrc.ID, "auth": map[string]any{"type": "bearer"},
		"secret": map[string]any{"value": canary}}, 201)
	sharedURL := consoleWS + "/" + shared.ID

	var sc []scenario
	sc = append(sc, each("workspace list", "GET", consoleWS, nil, readable(200), "Credentials", "Petstore", "X-API-Key header", "…QQQQ", "Billing", "Organization")...)
	sc = append(sc, each("organization list", "GET", "/o/acme/credentials", nil, readable(200), "Organization credentials", "Petstore", "Billing")...)
	sc = append(sc, each("my list", "GET", "/settings/credentials", nil, signedIn(200), "My credentials", "You have no credentials of your own")...)
	sc = append(sc, each("new page", "GET", consoleWS+"/new", nil, map[string]int{"owner": 200, "admin": 200, "member": 200, "viewer": 403, "outsider": 404, "anonymous": 303}, "Petstore", "Billing")...)
	sc = append(sc, each("new org page", "GET", "/o/acme/credentials/new", nil, map[string]int{"owner": 200, "member": 200, "viewer": 403, "outsider": 404}, "Billing")...)
	sc = append(sc, each("new page prefilled", "GET", consoleWS+"/new?source="+f.wsSrc.ID, nil, map[string]int{"owner": 200, "member": 200},
		"This API expects X-API-Key in a header.", `value="X-API-Key"`, `<option value="apiKey" selected`)...)
	sc = append(sc, each("new page prefill fragment", "GET", consoleWS+"/new?source_id="+f.orgSrc.ID, nil, map[string]int{"owner": 200}, "This API expects X-API-Key in a header.")...)
	sc = append(sc, each("my new page", "GET", "/settings/credentials/new", nil, map[string]int{"member": 200, "viewer": 200, "outsider": 200}, "New credential of your own")...)
	sc = append(sc, each("detail", "GET", sharedURL, nil, readable(200), "Credential for Petstore", "X-API-Key header", "…QQQQ")...)
	sc = append(sc, each("detail of the org's", "GET", "/o/acme/credentials/"+org.ID, nil, readable(200), "Credential for Billing", "Authorization: Bearer …")...)
	sc = append(sc, each("viewer create", "POST", consoleWS, url.Values{"source_id": {f.wsSrc.ID}, "scope": {"account"}, "type": {"bearer"}, "bearer_token": {canary2}},
		map[string]int{"viewer": 403, "outsider": 404})...)
	sc = append(sc, each("replace shared", "POST", sharedURL+"/secret", url.Values{"key_value": {canary2}}, map[string]int{"member": 403, "viewer": 403, "outsider": 404})...)
	sc = append(sc, each("edit shared", "POST", sharedURL, url.Values{"type": {"apiKey"}, "key_in": {"header"}, "key_name": {"X-Other"}}, map[string]int{"member": 403, "viewer": 403, "outsider": 404})...)
	sc = append(sc, each("delete shared", "POST", sharedURL+"/delete", url.Values{"confirm": {"yes"}}, map[string]int{"member": 403, "viewer": 403, "outsider": 404})...)
	sc = append(sc, each("test shared", "POST", sharedURL+"/test", nil, map[string]int{"member": 403, "viewer": 403, "outsider": 404})...)
	f.run(t, sc)

	// What each role sees on a shared credential's page and the list.
	for who, want := range map[string]bool{"owner": true, "admin": true, "member": false, "viewer": false} {
		page := f.as(who).get(sharedURL)
		if got := strings.Contains(page.body, "Replace the value"); got != want {
			t.Errorf("%s sees the Replace form: %v, want %v", who, got, want)
		}
		if got := strings.Contains(page.body, `data-testid="test-credential"`); got != want {
			t.Errorf("%s sees Test: %v, want %v", who, got, want)
		}
		if got := strings.Contains(page.body, `data-testid="read-only"`); got == want {
			t.Errorf("%s read-only notice: %v", who, got)
		}
		noSecret(t, who+" detail", page, canary)
	}
	list := f.viewer.get(consoleWS)
	if strings.Contains(list.body, `data-testid="new-credential"`) || !strings.Contains(list.body, `data-testid="read-only"`) {
		t.Errorf("viewer's list offers to create or lacks the read-only notice")
	}
	if !strings.Contains(f.member.get(consoleWS).body, `data-testid="new-credential"`) {
		t.Errorf("member's list does not offer to create their own")
	}
	// The navigation leads here: the workspace section is ready, the
	// organization and the user menu link their lists.
	nav := f.owner.get(consoleWS).body
	for _, want := range []string{`href="/o/acme/w/default/credentials" aria-current="page"`, `href="/o/acme/credentials"`, `href="/settings/credentials"`} {
		if !strings.Contains(nav, want) {
			t.Errorf("navigation lacks %s", want)
		}
	}
	if regexp.MustCompile(`<span>Credentials</span><small class="soon-tag">`).MatchString(nav) {
		t.Errorf("credentials still marked soon")
	}

	// The form shows errors next to each field, keeps the parameters and
	// never echoes a secret.
	forms := []struct {
		name   string
		form   url.Values
		errors []string
		kept   []string
	}{
		{"api key without name", url.Values{"source_id": {f.wsSrc.ID}, "scope": {"account"}, "type": {"apiKey"}, "key_in": {"header"}, "key_name": {"bad name!"}, "key_value": {canary}},
			[]string{`data-testid="error-key_name"`}, []string{`value="bad name!"`}},
		{"bearer bad header", url.Values{"source_id": {f.wsSrc.ID}, "scope": {"account"}, "type": {"bearer"}, "bearer_header": {"Bad Header"}, "bearer_scheme": {"Token"}, "bearer_token": {canary}},
			[]string{`data-testid="error-bearer_header"`}, []string{`value="Bad Header"`, `value="Token"`}},
		{"basic without password", url.Values{"source_id": {f.wsSrc.ID}, "scope": {"account"}, "type": {"basic"}, "username": {"ada"}, "password": {""}, "bearer_token": {canary}},
			[]string{`data-testid="error-password"`, "Enter the password."}, []string{`value="ada"`}},
		{"headers bad name", url.Values{"source_id": {f.wsSrc.ID}, "scope": {"account"}, "type": {"headers"}, "header_name": {"X-Token", "bad name"}, "header_value": {canary, canary2}},
			[]string{`data-testid="error-header_value"`, "is not a valid header name"}, []string{`value="X-Token"`, `value="bad name"`}},
		{"no source", url.Values{"source_id": {""}, "scope": {"account"}, "type": {"bearer"}, "bearer_token": {canary}},
			[]string{`data-testid="error-source_id"`}, nil},
		{"member shared scope", url.Values{"source_id": {f.wsSrc.ID}, "scope": {"workspace"}, "type": {"bearer"}, "bearer_token": {canary}}, nil, nil},
		{"other workspace's source", url.Values{"source_id": {f.otherSrc.ID}, "scope": {"account"}, "type": {"bearer"}, "bearer_token": {canary}},
			[]string{`data-testid="error-source_id"`, "No source with this id here."}, nil},
	}
	for _, tc := range forms {
		for _, htmx := range []bool{false, true} {
			res := f.member.post(consoleWS, tc.form, htmx)
			want := http.StatusUnprocessableEntity
			if tc.name == "member shared scope" {
				want = http.StatusForbidden
			}
			if res.status != want {
				t.Fatalf("%s (htmx %v): %d, want %d: %s", tc.name, htmx, res.status, want, excerpt(res.body))
			}
			noSecret(t, tc.name, res, canary, canary2)
			for _, s := range append(tc.errors, tc.kept...) {
				if !strings.Contains(res.body, s) {
					t.Errorf("%s (htmx %v): lacks %s", tc.name, htmx, s)
				}
			}
			if htmx && want == 422 && strings.Contains(res.body, "<html") {
				t.Errorf("%s: htmx got a whole page", tc.name)
			}
		}
	}
	// Without JavaScript, "Fill in from this source" re-renders the form
	// for the chosen source and drops what was typed.
	res := f.member.post(consoleWS, url.Values{"step": {"prefill"}, "source_id": {f.wsSrc.ID}, "scope": {"account"}, "type": {"bearer"}, "bearer_token": {canary}}, false)
	if res.status != 200 || !strings.Contains(res.body, "This API expects X-API-Key in a header.") || !strings.Contains(res.body, `<option value="apiKey" selected`) {
		t.Fatalf("prefill: %d %s", res.status, excerpt(res.body))
	}
	noSecret(t, "prefill", res, canary)

	// A member creates their own, replaces its value, edits it, tests and deletes it.
	memberID := f.userID(t, "member@acme.test")
	loc := credentialURL(t, f.member.post(consoleWS, url.Values{"source_id": {f.wsSrc.ID}, "scope": {"account"}, "type": {"bearer"},
		"bearer_header": {""}, "bearer_scheme": {""}, "bearer_token": {canary}, "key_value": {"ignored"}}, false))
	page := f.member.get(loc)
	if page.status != 200 || !strings.Contains(page.body, "…QQQQ") || !strings.Contains(page.body, "Authorization: Bearer …") || !strings.Contains(page.body, "Yours") {
		t.Fatalf("created page: %d %s", page.status, excerpt(page.body))
	}
	noSecret(t, "created page", page, canary)
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, &memberID); a == nil || a.Headers["Authorization"] != "Bearer "+canary {
		t.Fatalf("console credential: %+v", a)
	}
	mineList := f.member.get("/settings/credentials")
	if !strings.Contains(mineList.body, "Petstore") || !strings.Contains(mineList.body, "…QQQQ") || !strings.Contains(mineList.body, "acme") {
		t.Fatalf("my credentials: %s", excerpt(mineList.body))
	}
	if strings.Contains(f.member2.get("/settings/credentials").body, "…QQQQ") || f.member2.get(loc).status != 404 {
		t.Fatalf("member2 sees member's credential")
	}
	// Replace: an empty value is refused, a new one replaces.
	res = f.member.post(loc+"/secret", url.Values{"bearer_token": {""}}, true)
	if res.status != 422 || !strings.Contains(res.body, "Enter the token.") {
		t.Fatalf("empty replace: %d %s", res.status, excerpt(res.body))
	}
	if res := f.member.post(loc+"/secret", url.Values{"bearer_token": {canary2}}, false); res.status != 303 {
		t.Fatalf("replace: %d %s", res.status, excerpt(res.body))
	}
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, &memberID); a == nil || a.Headers["Authorization"] != "Bearer "+canary2 {
		t.Fatalf("replaced console credential: %+v", a)
	}
	// Edit: new parameters keep the value; a new type needs one.
	if res := f.member.post(loc, url.Values{"type": {"bearer"}, "bearer_header": {"X-Auth"}, "bearer_scheme": {""}, "bearer_token": {""}}, false); res.status != 303 {
		t.Fatalf("edit: %d %s", res.status, excerpt(res.body))
	}
	if a := f.resolve(t, f.wsSrc.ID, f.wsID, &memberID); a == nil || a.Headers["X-Auth"] != canary2 {
		t.Fatalf("edited console credential: %+v", a)
	}
	res = f.member.post(loc, url.Values{"type": {"apiKey"}, "key_in": {"header"}, "key_name": {"X-Key"}}, false)
	if res.status != 422 || !strings.Contains(res.body, "A new type needs its secret") || !strings.Contains(res.body, `value="X-Key"`) {
		t.Fatalf("type change without value: %d %s", res.status, excerpt(res.body))
	}
	// The list now says when it changed and who did; the page shows the new hint.
	page = f.member.get(loc)
	if !strings.Contains(page.body, "…RRRR") || !strings.Contains(page.body, "X-Auth header") {
		t.Fatalf("page after edit: %s", excerpt(page.body))
	}
	noSecret(t, "page after edit", page, canary, canary2)
	// Delete asks to confirm.
	res = f.member.post(loc+"/delete", nil, false)
	if res.status != 422 || !strings.Contains(res.body, "Tick the box to confirm.") {
		t.Fatalf("unconfirmed delete: %d %s", res.status, excerpt(res.body))
	}
	res = f.member.post(loc+"/delete", url.Values{"confirm": {"yes"}}, false)
	if res.status != 303 || res.header.Get("Location") != consoleWS {
		t.Fatalf("delete: %d %q", res.status, res.header.Get("Location"))
	}
	if f.member.get(loc).status != 404 {
		t.Fatal("deleted credential still has a page")
	}

	// My credentials: created from settings for a source of any organization.
	loc = credentialURL(t, f.member.post("/settings/credentials", url.Values{"source_id": {f.orgSrc.ID}, "scope": {"account"}, "type": {"headers"},
		"header_name": {"X-Service-Token", ""}, "header_value": {canary, ""}}, false))
	if !strings.HasPrefix(loc, "/settings/credentials/cred_") {
		t.Fatalf("my credential at %s", loc)
	}
	page = f.member.get(loc)
	if page.status != 200 || !strings.Contains(page.body, "X-Service-Token") || !strings.Contains(page.body, "Replace the value") {
		t.Fatalf("my credential page: %d %s", page.status, excerpt(page.body))
	}
	noSecret(t, "my credential page", page, canary)
	if res := f.member.post(loc+"/secret", url.Values{"header_name": {"X-Service-Token"}, "header_value": {canary2}}, false); res.status != 303 {
		t.Fatalf("replace my headers: %d %s", res.status, excerpt(res.body))
	}
	if a := f.resolve(t, f.orgSrc.ID, f.otherWSID, &memberID); a == nil || a.Headers["X-Service-Token"] != canary2 {
		t.Fatalf("my headers credential: %+v", a)
	}
	if f.owner.get(loc).status != 404 || f.viewer.post("/settings/credentials", url.Values{"source_id": {f.orgSrc.ID}, "type": {"bearer"}, "bearer_token": {canary}}, false).status != 403 {
		t.Fatal("my credential reachable by others, or a viewer created one")
	}
	if res := f.member.post(loc+"/delete", url.Values{"confirm": {"yes"}}, false); res.status != 303 || res.header.Get("Location") != "/settings/credentials" {
		t.Fatalf("delete mine: %d %q", res.status, res.header.Get("Location"))
	}

	// Owners create shared ones from the console, in the organization too.
	loc = credentialURL(t, f.owner.post("/o/acme/credentials", url.Values{"source_id": {f.orgSrc.ID}, "scope": {"account"}, "type": {"apiKey"},
		"key_in": {"query"}, "key_name": {"api_key"}, "key_value": {canary}}, false))
	if !strings.HasPrefix(loc, "/o/acme/credentials/cred_") || !strings.Contains(f.owner.get(loc).body, "api_key query parameter") {
		t.Fatalf("organization console credential at %s", loc)
	}
	if containsAny(logsOf(t), []string{canary, canary2}) {
		t.Errorf("a secret reached the log")
	}
}

// TestCredentialsInTheBrowser walks the create form with JavaScript in a
// real browser: choosing the source fills in what its API expects, only
// the chosen type's fields show, saving leads to the credential's page,
// Test answers in place, and the custom headers rows grow. Screenshots go
// to OutputDir/browser-credentials.
func TestCredentialsInTheBrowser(t *testing.T) {
	f := newCredFixture(t)
	canary := "browser-canary-0123456789-WXYZ"
	browserCtx, shots := startBrowser(t, 2*time.Minute, "browser-credentials")
	b := newTab(t, browserCtx, f.srv.URL, shots)
	// hidden reports whether an element is hidden, waiting a little for
	// the script, which runs after htmx settles a swap, to agree.
	hidden := func(sel string, want bool) bool {
		t.Helper()
		js := `document.querySelector(` + jsString(sel) + `).closest('[hidden]') !== null`
		deadline := time.Now().Add(5 * time.Second)
		for {
			h, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
			if err != nil {
				b.fail("read hidden of "+sel, err)
			}
			if h == want || time.Now().After(deadline) {
				return h
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	b.signIn("owner@acme.test")
	b.open(consoleWS)
	b.wantVisible(testid("empty"))
	b.shot("01-no-credentials")

	b.clickAndLoad(testid("new-credential"))
	b.wantPath(consoleWS + "/new")
	if hidden(`#credential-form [data-type="bearer"]`, false) || !hidden(`#credential-form [data-type="apiKey"]`, true) || !hidden(`#credential-form [data-testid="prefill"]`, true) {
		t.Fatal("the form does not show only the bearer fields at first")
	}
	// Choosing the source swaps the form (htmx), so its select is not read back as pick does.
	b.do("choose the source", chromedp.Evaluate[chromedp.Void](`(function (s) { s.value = `+jsString(f.wsSrc.ID)+
		`; s.dispatchEvent(new Event('change', {bubbles: true})) })(document.querySelector('#credential-form-source_id'))`))
	b.waitText(testid("auth-profile"), "This API expects X-API-Key in a header.")
	if got := b.value("#credential-form-type"); got != "apiKey" {
		t.Fatalf("type after choosing the source: %q", got)
	}
	if got := b.value("#credential-form-key_name"); got != "X-API-Key" {
		t.Fatalf("key name after choosing the source: %q", got)
	}
	if !hidden(`#credential-form [data-type="bearer"]`, true) || hidden(`#credential-form [data-type="apiKey"]`, false) {
		t.Fatal("after choosing the source, the API key fields are not the ones shown")
	}
	b.fill("#credential-form-key_value", canary)
	b.shot("02-new-prefilled")
	b.clickAndLoad(testid("credential-form-submit"))
	b.wantPathPrefix(consoleWS + "/cred_")
	b.waitText(testid("flash"), "Saved the credential for Petstore")
	b.wantText(testid("hint"), "…WXYZ")
	b.shot("03-credential")

	b.click(testid("test-credential"))
	b.waitText(testid("test-result"), "2 tools found")
	b.shot("04-tested")

	b.pick("#credential-edit-type", "headers")
	if hidden(`#credential-edit [data-type="headers"]`, false) || !hidden(`#credential-edit [data-type="apiKey"]`, true) {
		t.Fatal("choosing custom headers does not show their rows")
	}
	b.click(`#credential-edit [data-add-row]`)
	rows, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll('#credential-edit .header-row:not(.head)').length`))
	if err != nil || rows != 4 {
		t.Fatalf("header rows after Add a row: %d (%v)", rows, err)
	}
	b.shot("05-edit-headers")

	b.open(consoleWS)
	b.wantVisible(testid("credentials"))
	b.shot("06-list")
	html, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil || strings.Contains(html, canary) {
		t.Fatalf("the list shows the secret (%v)", err)
	}
	b.checkConsole()
}
