package gateway_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

const itemsKey = "k-live-canary-7f3a9e1d"

// itemsEnv is an env whose tenant a has the Items source over a live
// itemsAPI, with a workspace API key credential.
func itemsEnv(t testing.TB, opts ...func(*gateway.Options)) (*env, *itemsAPI, string) {
	t.Helper()
	e := newEnv(t, opts...)
	api := newItemsAPI(t)
	src := e.source(e.a, &e.a.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	e.credential(e.a, &e.a.ws, e.a.owner, src, credentials.ScopeWorkspace,
		credentials.Auth{Type: credentials.TypeAPIKey, In: "header", Name: "X-Api-Key"}, credentials.Secret{Value: itemsKey})
	return e, api, "items."
}

func TestOpenAPICallsTheUpstreamWithTheCredential(t *testing.T) {
	e, api, ns := itemsEnv(t)
	c := e.a.caller()

	// The X-Api-Key argument (the operation declares the header) cannot
	// replace the credential's.
	res := e.call(c, ns+"getItem", `{"id": 7, "verbose": true, "X-Api-Key": "attacker"}`)
	if res.IsError || !strings.Contains(text(res), `"name": "item 7"`) {
		t.Fatalf("getItem: isError %v, text %s", res.IsError, text(res))
	}
	if got := api.requests(); len(got) != 1 || got[0] != "GET /items/7?verbose=true key="+itemsKey {
		t.Errorf("the upstream saw %q", got)
	}
	var structured map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &structured); err != nil || structured["name"] != "item 7" {
		t.Errorf("structured content %s", b)
	}

	// A body, with a secret-looking argument the audit must not keep.
	res = e.call(c, ns+"createItem", `{"body": {"name": "kettle", "count": 2, "color": "red", "password": "hunter2-secret"}}`)
	if res.IsError || !strings.Contains(text(res), `"name": "kettle"`) {
		t.Fatalf("createItem: %s", text(res))
	}
	row := e.rec.last(t)
	if row.Outcome != audit.OutcomeOK || row.UpstreamStatus != 201 || row.Tool != ns+"createItem" || row.SourceID == "" {
		t.Errorf("audit row %+v", row)
	}
	if strings.Contains(string(row.Arguments), "hunter2") || !strings.Contains(string(row.Arguments), `"password":"[redacted]"`) || !strings.Contains(string(row.Arguments), `"name":"kettle"`) {
		t.Errorf("audit arguments %s", row.Arguments)
	}

	// An upstream that echoes the key: the agent never sees it.
	res = e.call(c, ns+"whoami", `{}`)
	if strings.Contains(text(res), itemsKey) || !strings.Contains(text(res), sources.Mask) {
		t.Errorf("whoami shows %s", text(res))
	}
	if b, _ := json.Marshal(res.StructuredContent); strings.Contains(string(b), itemsKey) {
		t.Errorf("structured content shows the key: %s", b)
	}

	// A failure: a tool error with the status and the body, scrubbed.
	res = e.call(c, ns+"fail", ``)
	if !res.IsError || !strings.Contains(text(res), "HTTP 503 Service Unavailable") || !strings.Contains(text(res), "down for maintenance") || strings.Contains(text(res), itemsKey) {
		t.Errorf("fail: isError %v, %s", res.IsError, text(res))
	}
	row = e.rec.last(t)
	if row.Outcome != audit.OutcomeError || row.UpstreamStatus != 503 || !strings.Contains(row.Error, "HTTP 503") || strings.Contains(row.Error, itemsKey) {
		t.Errorf("audit row of the failure %+v", row)
	}

	// A redirect to another origin goes there without the credential.
	res = e.call(c, ns+"away", `null`)
	if res.IsError || !strings.Contains(text(res), "landed") {
		t.Errorf("away: %s", text(res))
	}
	if got := api.redirected(); len(got) != 1 || got[0] != "/landing key=" {
		t.Errorf("the other origin saw %q", got)
	}

	// Every call made exactly one row, and none holds the key.
	rows := e.rec.all()
	if len(rows) != 5 {
		t.Errorf("%d audit rows for 5 calls", len(rows))
	}
	for _, r := range rows {
		if strings.Contains(string(r.Arguments), itemsKey) || strings.Contains(r.Error, itemsKey) || r.Via != gateway.ViaConsole || r.UserID != e.a.owner.UserID {
			t.Errorf("audit row %+v", r)
		}
	}
}

func TestOpenAPIAnswersTooLargeOrNotJSON(t *testing.T) {
	e, _, ns := itemsEnv(t)
	c := e.a.caller()
	res := e.call(c, ns+"big", `{}`)
	if res.IsError || !strings.HasSuffix(text(res), "[truncated: showed 1048576 of 10485760 bytes]") || len(text(res)) > gateway.DefaultMaxResultBytes+100 {
		t.Errorf("big: isError %v, %d bytes, ends %q", res.IsError, len(text(res)), text(res)[max(0, len(text(res))-80):])
	}
	res = e.call(c, ns+"broken", `{}`)
	if res.IsError || !strings.HasPrefix(text(res), `{"id": 1, "name": "cut`) || !strings.Contains(text(res), "not valid JSON") || res.StructuredContent != nil {
		t.Errorf("broken: %s", text(res))
	}
}

func TestInvalidArgumentsListEveryProblemAndSendNothing(t *testing.T) {
	e, api, ns := itemsEnv(t)
	c := e.a.caller()
	cases := []struct {
		name, path, args string
		want             []string
	}{
		{"body", ns + "createItem", `{"body": {"name": "k", "count": -1, "color": "blue", "size": 3}}`, []string{
			"/body/color: must be one of 'red', 'green'",
			"/body/count: must be at least 0, not -1",
			"/body/name: must be at least 2 characters long, not 1",
			"/body/size: is not a property allowed here",
		}},
		{"missing and extra", ns + "createItem", `{"bogus": 1}`, []string{
			"/body: required, but missing",
			"/bogus: is not an argument this tool takes",
		}},
		{"type", ns + "getItem", `{"id": "seven"}`, []string{"/id: must be integer, not string"}},
		{"secret value", ns + "createItem", `{"body": {"name": "kk", "count": 1, "password": "Hunter2!"}}`, []string{
			"/body/password: is not a valid value (not shown: the argument looks secret)",
		}},
		{"not an object", ns + "getItem", `[7]`, []string{"(arguments): must be an object, not an array"}},
		{"not JSON", ns + "getItem", `{"id": 7`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.gw.Call(t.Context(), c, tc.path, json.RawMessage(tc.args), nil)
			var inv *gateway.InvalidArgumentsError
			if !errors.As(err, &inv) {
				t.Fatalf("err = %v, want InvalidArgumentsError", err)
			}
			if tc.want != nil && !slices.Equal(inv.Problems, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(inv.Problems, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.want == nil && (len(inv.Problems) != 1 || !strings.Contains(inv.Problems[0], "not JSON")) {
				t.Errorf("problems %q", inv.Problems)
			}
			if row := e.rec.last(t); row.Outcome != audit.OutcomeInvalid || row.Tool != tc.path || !json.Valid(row.Arguments) || strings.Contains(row.Error+string(row.Arguments), "Hunter2") {
				t.Errorf("audit row %+v", row)
			}
		})
	}
	if got := api.requests(); len(got) != 0 {
		t.Errorf("invalid calls reached the upstream: %q", got)
	}
}

func TestOpenAPIUpstreamThatHangsTimesOut(t *testing.T) {
	e, _, ns := itemsEnv(t, func(o *gateway.Options) { o.HTTPTimeout = 400 * time.Millisecond })
	start := time.Now()
	res := e.call(e.a.caller(), ns+"hang", `{}`)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %s", d)
	}
	if !res.IsError || !strings.Contains(text(res), "did not answer within 400ms") || !strings.Contains(text(res), "time limit for OpenAPI and GraphQL calls") {
		t.Errorf("hang: %s", text(res))
	}
	if row := e.rec.last(t); row.Outcome != audit.OutcomeTimeout {
		t.Errorf("audit row %+v", row)
	}
}

// A spec from @readme/oas-examples served live by Prism: the api_key
// security scheme is satisfied by the credential, and Prism checks it.
func TestOpenAPIAgainstPrism(t *testing.T) {
	e := newEnv(t)
	specPath := testenv.PeerPath(t, "@readme/oas-examples/3.0/json/petstore.json")
	base := startPrism(t, specPath)
	spec := mustRead(t, specPath)
	src := e.source(e.a, nil, "Petstore", sources.TypeOpenAPI, openAPIConfig(spec, base))
	c := e.a.caller()
	getPet := e.toolPath(src, ".get_pet_by_id")

	// Without a credential Prism refuses: an upstream error, as a result.
	res := e.call(c, getPet, `{"petId": 1}`)
	if !res.IsError || !strings.Contains(text(res), "HTTP 401") {
		t.Errorf("without a credential: %s", text(res))
	}
	e.credential(e.a, nil, e.a.owner, src, credentials.ScopeOrganization,
		credentials.Auth{Type: credentials.TypeAPIKey, In: "header", Name: "api_key"}, credentials.Secret{Value: "prism-key-0042"})
	res = e.call(c, getPet, `{"petId": 1}`)
	if res.IsError || !strings.Contains(text(res), `"name"`) {
		t.Errorf("with the credential: %s", text(res))
	}
	order := e.toolPath(src, ".get_order_by_id")
	if res := e.call(c, order, `{"orderId": 5}`); res.IsError || !strings.Contains(text(res), `"status"`) {
		t.Errorf("order: %s", text(res))
	}
	_, err := e.gw.Call(t.Context(), c, order, json.RawMessage(`{"orderId": 11}`), nil)
	var inv *gateway.InvalidArgumentsError
	if !errors.As(err, &inv) || !slices.Equal(inv.Problems, []string{"/orderId: must be at most 10, not 11"}) {
		t.Errorf("orderId 11: %v", err)
	}
}
