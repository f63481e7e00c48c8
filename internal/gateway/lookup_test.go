package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/sources"
)

// Tenant a's first workspace has Items; its second workspace has Stash,
// and tenant b has its own Items and a Vault, all over live APIs with the
// same operations. A caller of a's first workspace reaches its Items only.
func TestCallerSeesOnlyItsWorkspace(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	apiA, apiStash, apiB, apiVault := newItemsAPI(t), newItemsAPI(t), newItemsAPI(t), newItemsAPI(t)
	e.source(e.a, &e.a.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, apiA.URL))
	e.source(e.a, &e.a.ws2, "Stash", sources.TypeOpenAPI, openAPIConfig(itemsSpec, apiStash.URL))
	e.source(e.b, &e.b.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, apiB.URL))
	e.source(e.b, nil, "Vault", sources.TypeOpenAPI, openAPIConfig(itemsSpec, apiVault.URL))
	a, b := e.a.caller(), e.b.caller()

	// The same path in two organizations: each caller reaches its own.
	e.call(a, "items.get_item", `{"id": 1}`)
	e.call(b, "items.get_item", `{"id": 2}`)
	if len(apiA.requests()) != 1 || len(apiB.requests()) != 1 || !strings.HasPrefix(apiA.requests()[0], "GET /items/1") {
		t.Errorf("a's API saw %q, b's %q", apiA.requests(), apiB.requests())
	}

	// Another workspace's and another organization's tools do not exist
	// for a, and their upstreams see nothing.
	for _, path := range []string{"stash.get_item", "vault.get_item", "vault.whoami", "stash.createItem"} {
		_, err := e.gw.Call(ctx, a, path, json.RawMessage(`{"id": 3}`), nil)
		var nf *gateway.NotFoundError
		if !errors.As(err, &nf) {
			t.Fatalf("%s: err = %v, want NotFoundError", path, err)
		}
		for _, s := range nf.Suggestions {
			if !strings.HasPrefix(s, "items.") {
				t.Errorf("%s: suggestion %s is not a's", path, s)
			}
		}
		if row := e.rec.last(t); row.Outcome != audit.OutcomeNotFound || row.SourceID != "" || row.Tool != path {
			t.Errorf("audit row %+v", row)
		}
		if _, err := e.gw.Describe(ctx, a, path); !errors.As(err, &nf) {
			t.Errorf("describe %s: %v", path, err)
		}
	}
	if n := len(apiStash.requests()) + len(apiVault.requests()); n != 0 {
		t.Errorf("other tenants' upstreams saw %d requests", n)
	}

	hits, err := e.gw.Search(ctx, a, "item", 50, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 {
		t.Error("search found nothing")
	}
	for _, h := range hits {
		if !strings.HasPrefix(h.Path, "items.") {
			t.Errorf("search shows %s", h.Path)
		}
	}
	tools, err := e.gw.List(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 8 {
		t.Errorf("listed %d tools, want 8", len(tools))
	}
	for i, tool := range tools {
		if !strings.HasPrefix(tool.Path, "items.") || i > 0 && tools[i-1].Path >= tool.Path {
			t.Errorf("list: %s after %s", tool.Path, tools[max(i-1, 0)].Path)
		}
	}
}

func TestUnknownToolSuggests(t *testing.T) {
	e, api, _ := itemsEnv(t)
	_, err := e.gw.Call(t.Context(), e.a.caller(), "items.get_itme", json.RawMessage(`{"id": 1}`), nil)
	var nf *gateway.NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v", err)
	}
	if len(nf.Suggestions) == 0 || nf.Suggestions[0] != "items.get_item" || len(nf.Suggestions) > 5 {
		t.Errorf("suggestions %q", nf.Suggestions)
	}
	if !strings.Contains(nf.Error(), "did you mean items.get_item") {
		t.Errorf("message %q", nf.Error())
	}
	// Describe by alias finds the tool; by its exact path too.
	tool, err := e.gw.Describe(t.Context(), e.a.caller(), "items.getItem")
	if err != nil || tool.Path != "items.get_item" || tool.SourceType != "openapi" || len(tool.InputSchema) == 0 || len(tool.OutputSchema) == 0 {
		t.Errorf("describe: %+v, %v", tool, err)
	}
	if len(api.requests()) != 0 {
		t.Errorf("the upstream saw %q", api.requests())
	}
}

func TestDisabledSourceIsNotFoundAndChangesTheVersion(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	api := newItemsAPI(t)
	v0, err := e.gw.RegistryVersion(ctx, e.a.org.ID, e.a.ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	src := e.source(e.a, &e.a.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	v1, _ := e.gw.RegistryVersion(ctx, e.a.org.ID, e.a.ws.ID)
	if v1 == v0 {
		t.Error("adding a source left the version")
	}
	if again, _ := e.gw.RegistryVersion(ctx, e.a.org.ID, e.a.ws.ID); again != v1 {
		t.Error("the version moved with nothing changed")
	}
	// Another workspace's source does not move this one's version.
	e.source(e.a, &e.a.ws2, "Stash", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	if again, _ := e.gw.RegistryVersion(ctx, e.a.org.ID, e.a.ws.ID); again != v1 {
		t.Error("another workspace's source moved the version")
	}
	e.call(e.a.caller(), "items.get_item", `{"id": 1}`)

	if _, err := e.sources.SetEnabled(ctx, src, 0, false); err != nil {
		t.Fatal(err)
	}
	v2, _ := e.gw.RegistryVersion(ctx, e.a.org.ID, e.a.ws.ID)
	if v2 == v1 {
		t.Error("disabling left the version")
	}
	_, err = e.gw.Call(ctx, e.a.caller(), "items.get_item", json.RawMessage(`{"id": 1}`), nil)
	var nf *gateway.NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("call of a disabled source: %v", err)
	}
	if _, err := e.gw.Describe(ctx, e.a.caller(), "items.get_item"); !errors.As(err, &nf) {
		t.Errorf("describe of a disabled source: %v", err)
	}
	if tools, _ := e.gw.List(ctx, e.a.caller()); len(tools) != 0 {
		t.Errorf("list shows %d tools of a disabled source", len(tools))
	}
	if got := api.requests(); len(got) != 1 {
		t.Errorf("the upstream saw %q", got)
	}
}

// The gateway picks credentials in Resolve's order (the user's own, the
// workspace's, the organization's) and sees a replaced one at once.
func TestCredentialOrderMatchesResolve(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	api := newItemsAPI(t)
	src := e.source(e.a, nil, "Shared", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	key := credentials.Auth{Type: credentials.TypeAPIKey, In: "header", Name: "X-Api-Key"}
	e.credential(e.a, nil, e.a.owner, src, credentials.ScopeOrganization, key, credentials.Secret{Value: "org-key-000001"})
	wsCred := e.credential(e.a, &e.a.ws, e.a.owner, src, credentials.ScopeWorkspace, key, credentials.Secret{Value: "ws-key-000001"})
	e.credential(e.a, &e.a.ws, e.a.member, src, credentials.ScopeAccount, key, credentials.Secret{Value: "member-key-0001"})

	cases := []struct {
		name   string
		caller gateway.Caller
		want   string
	}{
		{"owner in one", e.a.caller(), "ws-key-000001"},
		{"owner in two", gateway.Caller{OrgID: e.a.org.ID, WorkspaceID: e.a.ws2.ID, UserID: e.a.owner.UserID}, "org-key-000001"},
		{"member in one", gateway.Caller{OrgID: e.a.org.ID, WorkspaceID: e.a.ws.ID, UserID: e.a.member.UserID}, "member-key-0001"},
		{"member in two", gateway.Caller{OrgID: e.a.org.ID, WorkspaceID: e.a.ws2.ID, UserID: e.a.member.UserID}, "member-key-0001"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(api.requests())
			res := e.call(tc.caller, "shared.whoami", `{}`)
			if res.IsError {
				t.Fatal(text(res))
			}
			got := api.requests()[before:]
			if len(got) != 1 || got[0] != "GET /whoami key="+tc.want {
				t.Errorf("the upstream saw %q, want key %s", got, tc.want)
			}
			r, err := e.creds.Resolve(ctx, src, tc.caller.WorkspaceID, &tc.caller.UserID)
			if err != nil || r == nil || r.Auth.Headers["X-Api-Key"] != tc.want {
				t.Errorf("Resolve disagrees: %+v, %v", r, err)
			}
		})
	}

	// A replaced secret applies to the next call.
	if _, err := e.creds.Update(ctx, credentials.Place{OrgID: e.a.org.ID, WorkspaceID: &e.a.ws.ID}, e.a.owner, wsCred.ID,
		credentials.Patch{Secret: &credentials.Secret{Value: "ws-key-000002"}}); err != nil {
		t.Fatal(err)
	}
	e.call(e.a.caller(), "shared.whoami", `{}`)
	if got := api.requests(); got[len(got)-1] != "GET /whoami key=ws-key-000002" {
		t.Errorf("after replacing the secret the upstream saw %q", got[len(got)-1])
	}
	var used bool
	if err := e.store.DB().QueryRowContext(context.Background(), `SELECT last_used_at IS NOT NULL FROM credentials WHERE id = $1`, wsCred.ID).Scan(&used); err != nil || !used {
		t.Errorf("the credential's use was not recorded: %v", err)
	}
}

func TestRedactArguments(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `{}`},
		{`null`, `{}`},
		{`{"q": "cats", "limit": 3}`, `{"q":"cats","limit":3}`},
		{`{"password": "p", "API-Key": "k", "nested": {"client_secret": "s", "list": [{"accessToken": "t"}, {"x": 1}]}, "max_tokens": 5}`,
			`{"API-Key":"[redacted]","max_tokens":5,"nested":{"client_secret":"[redacted]","list":[{"accessToken":"[redacted]"},{"x":1}]},"password":"[redacted]"}`},
		{`{"Authorization": "Bearer x", "cookie": "a=b", "private_key": {"pem": "..."}, "credential": null, "token": 123}`,
			`{"Authorization":"[redacted]","cookie":"[redacted]","credential":null,"private_key":"[redacted]","token":"[redacted]"}`},
		{`[1, {"secret": "s"}]`, `{"[arguments]":[1,{"secret":"[redacted]"}]}`},
		{`{"a": `, `{"[arguments]":"6 bytes that are not JSON"}`},
	}
	for _, tc := range cases {
		if got := string(gateway.RedactArguments(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("RedactArguments(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	long := `{"doc": "` + strings.Repeat("z", 20000) + `", "n": 1}`
	got := gateway.RedactArguments(json.RawMessage(long))
	if len(got) > audit.MaxArgumentBytes || !json.Valid(got) || !strings.Contains(string(got), `"n":1`) || !strings.Contains(string(got), "[20000 bytes]") {
		t.Errorf("long arguments kept as %d bytes: %.200s", len(got), got)
	}
	huge := `{"list": [` + strings.TrimSuffix(strings.Repeat(`{"k": "`+strings.Repeat("w", 300)+`"},`, 400), ",") + `]}`
	if got := gateway.RedactArguments(json.RawMessage(huge)); len(got) > audit.MaxArgumentBytes || !json.Valid(got) {
		t.Errorf("huge arguments kept as %d bytes", len(got))
	}
}
