package handlers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

const apiKeysWS = "/api/v1/orgs/acme/workspaces/default/api-keys"

// createdKey is the answer to creating an API key.
type createdKey struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Prefix     string  `json:"prefix"`
	Mode       string  `json:"mode"`
	OwnerEmail string  `json:"owner_email"`
	ExpiresAt  *string `json:"expires_at"`
	Key        string  `json:"key"`
}

// createKey creates a key through the API as c.
func createKey(t *testing.T, c *client, path string, body map[string]any) createdKey {
	t.Helper()
	res := c.api("POST", path, body)
	if res.status != http.StatusCreated {
		t.Fatalf("create key: status %d: %s", res.status, res.body)
	}
	var k createdKey
	res.json(t, &k)
	return k
}

// TestAPIKeysAPIRoundTrip creates, lists and revokes a key through the API:
// the value comes back once, only its hash is stored, and revoking it ends
// it at once.
func TestAPIKeysAPIRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	authn := &auth.Authenticator{Store: f.store}
	k := createKey(t, f.member, apiKeysWS, map[string]any{"name": "claude", "mode": "direct", "expires_in_days": 30})
	if !strings.HasPrefix(k.Key, "tgk_") || len(k.Key) != 36 || !strings.HasPrefix(k.Key, k.Prefix) ||
		k.Name != "claude" || k.Mode != "direct" || k.OwnerEmail != "member@acme.test" || k.ExpiresAt == nil {
		t.Fatalf("created %+v", k)
	}
	d := createKey(t, f.owner, apiKeysWS, map[string]any{"name": "default mode"})
	if d.Mode != "search" || d.ExpiresAt != nil {
		t.Fatalf("defaults: %+v", d)
	}

	res := f.viewer.api("GET", apiKeysWS, nil)
	if res.status != http.StatusOK || !strings.Contains(res.body, `"name":"claude"`) || strings.Contains(res.body, k.Key) || strings.Contains(res.body, `"key"`) {
		t.Fatalf("list: %d %s", res.status, res.body)
	}

	// Only the hash is stored: no column of any row holds the value.
	var hash []byte
	var row string
	if err := f.store.DB().QueryRowContext(ctx, `SELECT key_hash, k::text FROM api_keys k WHERE id = $1`, k.ID).Scan(&hash, &row); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte(k.Key)); !bytes.Equal(hash, sum[:]) {
		t.Fatal("key_hash is not the SHA-256 of the key")
	}
	if strings.Contains(row, k.Key) || strings.Contains(row, k.Key[len(k.Prefix):]) {
		t.Fatalf("the row holds the key: %s", row)
	}

	g, err := authn.APIKey(ctx, k.Key)
	if err != nil || g.User.Email != "member@acme.test" || g.Workspace.Slug != "default" || g.Role != "member" {
		t.Fatalf("authenticate: %+v %v", g, err)
	}
	if res := f.member.api("DELETE", fmt.Sprintf("%s/%d", apiKeysWS, k.ID), nil); res.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	if _, err := authn.APIKey(ctx, k.Key); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("revoked key: err = %v", err)
	}
	if res := f.member.api("DELETE", fmt.Sprintf("%s/%d", apiKeysWS, k.ID), nil); res.status != http.StatusNotFound {
		t.Fatalf("revoke twice: %d", res.status)
	}
	if res := f.owner.api("GET", apiKeysWS, nil); strings.Contains(res.body, `"claude"`) {
		t.Fatalf("revoked key still listed: %s", res.body)
	}
	// An API key is for the MCP endpoint, not for the JSON API.
	if res := (&client{e: f.env, http: f.anon.http, token: d.Key}).api("GET", "/api/v1/me", nil); res.status != http.StatusUnauthorized {
		t.Fatalf("an API key as a personal token: %d", res.status)
	}

	if logs := logsOf(t); strings.Contains(logs, k.Key[len(k.Prefix):]) || strings.Contains(logs, d.Key[len(d.Prefix):]) {
		t.Fatal("the log holds an API key")
	}
}

// TestAPIKeysConsole creates a key on the console, sees it once, and
// revokes it with the row's button.
func TestAPIKeysConsole(t *testing.T) {
	f := newFixture(t)
	page := "/o/acme/w/default/api-keys"
	res := f.member.get(page)
	if res.status != http.StatusOK || !strings.Contains(res.body, "No API keys yet") || !strings.Contains(res.body, `data-testid="api-key-form"`) {
		t.Fatalf("empty page: %d %s", res.status, excerpt(res.body))
	}
	if res := f.member.post(page, url.Values{"name": {"<bad>"}, "mode": {"all"}, "expires_in_days": {"90"}}, true); res.status != http.StatusUnprocessableEntity ||
		!strings.Contains(res.body, "Use letters, digits") || !strings.Contains(res.body, "Choose search or direct.") || strings.Contains(res.body, "<html") {
		t.Fatalf("invalid form: %d %s", res.status, excerpt(res.body))
	}
	res = f.member.post(page, url.Values{"name": {"cursor"}, "mode": {"direct"}, "expires_in_days": {"0"}}, false)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != page {
		t.Fatalf("create: %d %v", res.status, res.header)
	}
	shown := f.member.get(page)
	start := strings.Index(shown.body, `data-testid="api-key-value">`)
	if start < 0 || !strings.Contains(shown.body, "it will not be shown again") || !strings.Contains(shown.body, `data-copy="api-key-value"`) {
		t.Fatalf("key not shown: %s", excerpt(shown.body))
	}
	plain := shown.body[start+len(`data-testid="api-key-value">`):]
	plain = plain[:strings.Index(plain, "<")]
	if !strings.HasPrefix(plain, "tgk_") {
		t.Fatalf("shown value %q", plain)
	}
	if _, err := (&auth.Authenticator{Store: f.store}).APIKey(context.Background(), plain); err != nil {
		t.Fatalf("shown key does not authenticate: %v", err)
	}
	again := f.member.get(page)
	if strings.Contains(again.body, plain) || !strings.Contains(again.body, "cursor") || !strings.Contains(again.body, "member@acme.test") || !strings.Contains(again.body, "direct") {
		t.Fatalf("second visit: %s", excerpt(again.body))
	}
	for _, who := range []*client{f.owner, f.viewer} {
		if res := who.get(page); strings.Contains(res.body, plain) {
			t.Fatal("another person sees the key")
		}
	}

	// Viewers see the list only; a member revokes their own key.
	view := f.viewer.get(page)
	if !strings.Contains(view.body, "cursor") || strings.Contains(view.body, `data-testid="api-key-form"`) || strings.Contains(view.body, "Revoke") {
		t.Fatalf("viewer page: %s", excerpt(view.body))
	}
	id := f.keyID(t, "cursor")
	res = f.member.post(fmt.Sprintf("%s/%d/revoke", page, id), nil, false)
	if res.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", res.status)
	}
	if after := f.member.get(page); !strings.Contains(after.body, "API key revoked") || !strings.Contains(after.body, "No API keys yet") {
		t.Fatalf("after revoke: %s", excerpt(after.body))
	}
	if _, err := (&auth.Authenticator{Store: f.store}).APIKey(context.Background(), plain); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("revoked key: %v", err)
	}
	if strings.Contains(logsOf(t), plain) {
		t.Fatal("the log holds an API key")
	}
}

// keyID finds a live key's id by name.
func (f *fixture) keyID(t *testing.T, name string) int64 {
	t.Helper()
	var id int64
	if err := f.store.DB().QueryRow(`SELECT id FROM api_keys WHERE name = $1 AND revoked_at IS NULL`, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAPIKeysByRole is the permission table: members and above create keys
// as themselves, viewers only list, members revoke only their own, owners
// and admins any; outsiders see nothing.
func TestAPIKeysByRole(t *testing.T) {
	f := newFixture(t)
	ownerKey := createKey(t, f.owner, apiKeysWS, map[string]any{"name": "owner key"})
	memberKey := createKey(t, f.member, apiKeysWS, map[string]any{"name": "member key"})
	adminKey := createKey(t, f.admin, apiKeysWS, map[string]any{"name": "admin key"})
	one := func(s int) map[string]int { return map[string]int{"owner": s} }
	page := "/o/acme/w/default/api-keys"
	var sc []scenario
	sc = append(sc, each("page", "GET", page, nil, readable(200), "API keys", "owner key", "member key")...)
	sc = append(sc, each("create invalid", "POST", page, url.Values{"name": {""}}, map[string]int{"owner": 422, "admin": 422, "member": 422, "viewer": 403, "outsider": 404, "anonymous": 303}, "Enter a name.")...)
	sc = append(sc, each("revoke unknown", "POST", page+"/999999/revoke", nil, map[string]int{"owner": 404, "member": 404, "viewer": 403, "outsider": 404})...)
	sc = append(sc, each("revoke another's", "POST", fmt.Sprintf("%s/%d/revoke", page, ownerKey.ID), nil, map[string]int{"member": 403, "viewer": 403, "outsider": 404})...)
	sc = append(sc, each("revoke another's", "POST", fmt.Sprintf("%s/%d/revoke", page, memberKey.ID), nil, one(303))...)
	f.run(t, sc)

	type apiCase struct {
		who, method, path string
		body              any
		want              int
	}
	for _, tc := range []apiCase{
		{"viewer", "GET", apiKeysWS, nil, 200},
		{"viewer", "POST", apiKeysWS, map[string]any{"name": "v"}, 403},
		{"member", "POST", apiKeysWS, map[string]any{"name": ""}, 422},
		{"member", "POST", apiKeysWS, map[string]any{"name": "m", "mode": "all"}, 422},
		{"member", "POST", apiKeysWS, map[string]any{"name": "m", "owner_id": 1}, 400},
		{"outsider", "GET", apiKeysWS, nil, 404},
		{"outsider", "POST", apiKeysWS, map[string]any{"name": "o"}, 404},
		{"outsider", "DELETE", fmt.Sprintf("%s/%d", apiKeysWS, adminKey.ID), nil, 404},
		{"anonymous", "GET", apiKeysWS, nil, 401},
		{"viewer", "DELETE", fmt.Sprintf("%s/%d", apiKeysWS, adminKey.ID), nil, 403},
		{"member", "DELETE", fmt.Sprintf("%s/%d", apiKeysWS, adminKey.ID), nil, 403},
		{"member", "DELETE", apiKeysWS + "/nope", nil, 404},
		{"admin", "DELETE", fmt.Sprintf("%s/%d", apiKeysWS, ownerKey.ID), nil, 204},
		{"owner", "DELETE", fmt.Sprintf("%s/%d", apiKeysWS, adminKey.ID), nil, 204},
	} {
		if res := f.as(tc.who).api(tc.method, tc.path, tc.body); res.status != tc.want {
			t.Errorf("%s %s as %s: %d, want %d: %s", tc.method, tc.path, tc.who, res.status, tc.want, excerpt(res.body))
		}
	}
	// Every key was revoked by someone allowed to.
	if res := f.owner.api("GET", apiKeysWS, nil); strings.TrimSpace(res.body) != `{"data":[]}` {
		t.Fatalf("keys left: %s", res.body)
	}
}

// TestAPIKeysIsolation: workspace A's routes neither list nor revoke B's key.
func TestAPIKeysIsolation(t *testing.T) {
	f := newFixture(t)
	if res := f.owner.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Other"}); res.status != http.StatusCreated {
		t.Fatalf("create workspace: %d %s", res.status, res.body)
	}
	other := "/api/v1/orgs/acme/workspaces/other/api-keys"
	b := createKey(t, f.owner, other, map[string]any{"name": "in other"})
	if res := f.owner.api("GET", apiKeysWS, nil); res.status != 200 || strings.Contains(res.body, "in other") {
		t.Fatalf("A lists B's key: %s", res.body)
	}
	if res := f.owner.api("DELETE", fmt.Sprintf("%s/%d", apiKeysWS, b.ID), nil); res.status != http.StatusNotFound {
		t.Fatalf("A revokes B's key: %d", res.status)
	}
	if res := f.owner.post(fmt.Sprintf("/o/acme/w/default/api-keys/%d/revoke", b.ID), nil, false); res.status != http.StatusNotFound {
		t.Fatalf("A's console revokes B's key: %d", res.status)
	}
	if res := f.owner.get("/o/acme/w/default/api-keys"); strings.Contains(res.body, "in other") {
		t.Fatal("A's page lists B's key")
	}
	// The outsider's own organization does not reach Acme's keys either.
	if res := f.outsider.api("DELETE", fmt.Sprintf("/api/v1/orgs/globex/workspaces/default/api-keys/%d", b.ID), nil); res.status != http.StatusNotFound {
		t.Fatalf("another organization revokes the key: %d", res.status)
	}
	if res := f.owner.api("GET", other, nil); !strings.Contains(res.body, "in other") {
		t.Fatalf("B's key is gone: %s", res.body)
	}
}
