package handlers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
)

// petsSpec is an OpenAPI document of the pets API petsUpstream serves.
const petsSpec = `{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"},
	"servers": [{"url": %q}],
	"paths": {
		"/pets/{id}": {"get": {"operationId": "getPet", "summary": "Find a pet by id.",
			"parameters": [
				{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
				{"name": "verbose", "in": "query", "schema": {"type": "boolean"}}],
			"responses": {"200": {"description": "The pet.", "content": {"application/json": {"schema": {"type": "object"}}}},
				"404": {"description": "No such pet."}}}}}}`

// petsUpstream is a real HTTP API: GET /pets/{id} answers the pet, or 404
// for id "404". It records the paths it was asked for.
type petsUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	asked []string
}

func newPetsUpstream(t *testing.T) *petsUpstream {
	u := &petsUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.asked = append(u.asked, r.URL.RequestURI())
		u.mu.Unlock()
		id := strings.TrimPrefix(r.URL.Path, "/pets/")
		w.Header().Set("Content-Type", "application/json")
		if id == "404" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"no pet 404"}`)
			return
		}
		fmt.Fprintf(w, `{"id":%q,"name":"Rex","verbose":%q}`, id, r.URL.Query().Get("verbose"))
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *petsUpstream) calls() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.asked...)
}

// pixel is a 1x1 PNG.
var pixel, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// newPicturesUpstream is a real MCP server over Streamable HTTP with one
// tool that answers an image and a line of text.
func newPicturesUpstream(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "pictures", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "pixel", Description: "Draws one pixel."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: pixel, MIMEType: "image/png"},
			&mcp.TextContent{Text: "one red pixel"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

const (
	petTool = "/o/acme/w/default/tools/pets.get_pet"
	petTry  = petTool + "/try"
)

// TestTryIt calls real upstreams from the tool page: an OpenAPI API and an
// MCP server, as a member, through the gateway. Bad JSON and schema
// failures come back next to the field with every problem listed, nothing
// sent upstream; viewers cannot run tools; a disabled source says why; a
// tool of another organization is 404.
func TestTryIt(t *testing.T) {
	f := newFixture(t, peerVars)
	f.allowAll("acme")
	owner := tokenClient(t, f.env, "owner@acme.test")
	pets := newPetsUpstream(t)
	src := createSource(t, owner, wsSources, map[string]any{"name": "Pets", "type": "openapi",
		"config": map[string]any{"spec": json.RawMessage(fmt.Sprintf(petsSpec, pets.URL))}}, http.StatusCreated)
	if src.State != "ready" {
		t.Fatalf("pets source: %s %s", src.State, src.Error)
	}
	pictures := createSource(t, owner, wsSources, map[string]any{"name": "Pictures", "type": "mcp",
		"config": map[string]any{"transport": "streamable-http", "url": newPicturesUpstream(t)}}, http.StatusCreated)
	if pictures.State != "ready" {
		t.Fatalf("pictures source: %s %s", pictures.State, pictures.Error)
	}

	// The page: the form, prefilled with the example's arguments.
	page := f.member.get(petTool)
	if page.status != http.StatusOK || !strings.Contains(page.body, `data-testid="try-it-form"`) ||
		!strings.Contains(page.body, `action="`+petTry+`"`) || !strings.Contains(html.UnescapeString(page.body), `"id": "…"`) {
		t.Fatalf("tool page: %d %s", page.status, excerptAround(page.body, "try-it"))
	}
	if v := f.viewer.get(petTool); !strings.Contains(v.body, `data-testid="try-it-viewer"`) || strings.Contains(v.body, `data-testid="try-it-form"`) {
		t.Fatalf("viewer's tool page: %s", excerptAround(v.body, "try-it"))
	}

	// A call: the answer in place, JSON pretty-printed, with its duration.
	res := f.member.post(petTry, url.Values{"arguments": {`{"id": "7", "verbose": true}`}}, true)
	if res.status != http.StatusOK || strings.Contains(res.body, "<html") ||
		!strings.Contains(res.body, `data-testid="try-outcome">ok<`) ||
		!strings.Contains(html.UnescapeString(res.body), "{\n  \"id\": \"7\",\n  \"name\": \"Rex\",\n  \"verbose\": \"true\"\n}") ||
		!regexp.MustCompile(`data-testid="try-duration">in [0-9.]+[µm]?s<`).MatchString(res.body) {
		t.Fatalf("call: %d %s", res.status, excerpt(res.body))
	}
	if strings.Contains(res.body, `data-testid="try-structured"`) {
		t.Errorf("the JSON answer is shown twice: %s", excerpt(res.body))
	}
	if got := pets.calls(); len(got) != 1 || got[0] != "/pets/7?verbose=true" {
		t.Fatalf("upstream was asked %v", got)
	}
	// The arguments stay as typed, for the next call.
	if !strings.Contains(html.UnescapeString(res.body), `{"id": "7", "verbose": true}</textarea>`) {
		t.Errorf("the arguments were not kept: %s", excerptAround(res.body, "textarea"))
	}

	// The upstream's failure is a tool error, not a toolgate error.
	res = f.member.post(petTry, url.Values{"arguments": {`{"id": "404"}`}}, true)
	if res.status != http.StatusOK || !strings.Contains(res.body, `data-testid="try-outcome">tool error<`) || !strings.Contains(res.body, "no pet 404") {
		t.Fatalf("tool error: %d %s", res.status, excerpt(res.body))
	}

	// Without JavaScript: the whole page, with the answer.
	res = f.member.post(petTry, url.Values{"arguments": {`{"id": "8"}`}}, false)
	if res.status != http.StatusOK || !strings.Contains(res.body, "<html") || !strings.Contains(res.body, `data-testid="try-outcome">ok<`) {
		t.Fatalf("call without htmx: %d %s", res.status, excerpt(res.body))
	}

	// Bad input: shown next to the field, every problem, nothing sent.
	before := len(pets.calls())
	for _, tc := range []struct {
		name, args string
		want       []string
	}{
		{"not JSON", `{"id": 7,}`, []string{"Not valid JSON at line 1, column 10"}},
		{"cut short", `{"id": "7"`, []string{"Not valid JSON: it ends too early"}},
		{"not an object", `["7"]`, []string{"must be a JSON object"}},
		{"schema", `{"id": 7, "verbose": "yes"}`, []string{"/id", "/verbose"}},
		{"missing", `{"verbose": false}`, []string{"id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.member.post(petTry, url.Values{"arguments": {tc.args}}, true)
			problems := regexp.MustCompile(`(?s)<ul class="error" id="try-arguments-error" data-testid="try-problems">(.*?)</ul>`).FindStringSubmatch(res.body)
			if res.status != http.StatusUnprocessableEntity || problems == nil || !strings.Contains(res.body, `aria-invalid`) ||
				!strings.Contains(html.UnescapeString(res.body), tc.args+"</textarea>") {
				t.Fatalf("%d %s", res.status, excerpt(res.body))
			}
			items := regexp.MustCompile(`<li>(.*?)</li>`).FindAllStringSubmatch(problems[1], -1)
			if len(items) != len(tc.want) {
				t.Errorf("%d problems listed, want %d: %s", len(items), len(tc.want), problems[1])
			}
			for i, want := range tc.want {
				if i < len(items) && !strings.Contains(html.UnescapeString(items[i][1]), want) {
					t.Errorf("problem %d %q lacks %q", i, items[i][1], want)
				}
			}
		})
	}
	if got := pets.calls(); len(got) != before {
		t.Fatalf("bad arguments reached the upstream: %v", got[before:])
	}

	// An MCP server's image is shown, its text beside it.
	res = f.member.post("/o/acme/w/default/tools/pictures.pixel/try", url.Values{"arguments": {`{}`}}, true)
	if res.status != http.StatusOK || !strings.Contains(res.body, `src="data:image/png;base64,`+base64.StdEncoding.EncodeToString(pixel)+`"`) ||
		!strings.Contains(res.body, `data-testid="try-text">one red pixel<`) {
		t.Fatalf("image: %d %s", res.status, excerpt(res.body))
	}

	// The calls are recorded as the member's, from the console.
	var calls int
	if err := f.store.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM tool_calls t JOIN users u ON u.id = t.user_id
		WHERE t.via = 'console' AND u.email = 'member@acme.test' AND t.tool = 'pets.get_pet'`).Scan(&calls); err != nil {
		t.Fatal(err)
	}
	if calls < 3 {
		waitFor(t, "the console calls in the audit", func() bool {
			_ = f.store.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM tool_calls t JOIN users u ON u.id = t.user_id
				WHERE t.via = 'console' AND u.email = 'member@acme.test' AND t.tool = 'pets.get_pet'`).Scan(&calls)
			return calls >= 3
		})
	}

	// Viewers may not call; other organizations do not see the tool.
	before = len(pets.calls())
	if res := f.viewer.post(petTry, url.Values{"arguments": {`{"id": "1"}`}}, true); res.status != http.StatusForbidden {
		t.Errorf("viewer: %d", res.status)
	}
	if res := f.outsider.post(petTry, url.Values{"arguments": {`{"id": "1"}`}}, true); res.status != http.StatusNotFound {
		t.Errorf("outsider in Acme: %d", res.status)
	}
	globex := tokenClient(t, f.env, "outsider@globex.test")
	createSource(t, globex, "/api/v1/orgs/globex/workspaces/default/sources", map[string]any{"name": "Globex Pets", "type": "openapi",
		"config": map[string]any{"spec": json.RawMessage(fmt.Sprintf(petsSpec, pets.URL))}}, http.StatusCreated)
	if res := f.outsider.post("/o/globex/w/default/tools/globex-pets.get_pet/try", url.Values{"arguments": {`{"id": "2"}`}}, true); res.status != http.StatusOK {
		t.Fatalf("Globex's own tool: %d %s", res.status, excerpt(res.body))
	}
	for _, c := range []*client{f.member, f.owner} {
		if res := c.post("/o/acme/w/default/tools/globex-pets.get_pet/try", url.Values{"arguments": {`{"id": "3"}`}}, true); res.status != http.StatusNotFound {
			t.Errorf("Globex's tool from Acme: %d", res.status)
		}
	}
	if got := pets.calls(); len(got) != before+1 || got[before] != "/pets/2" {
		t.Errorf("upstream calls after the refusals: %v", got[before:])
	}

	// A disabled source: the section says why, and a call is refused.
	if res := owner.api("PATCH", wsSources+"/"+src.ID, map[string]any{"enabled": false}); res.status != http.StatusOK {
		t.Fatalf("disable: %d %s", res.status, res.body)
	}
	if p := f.member.get(petTool); !strings.Contains(p.body, `data-testid="try-it-blocked">The source Pets is disabled`) || strings.Contains(p.body, `data-testid="try-it-form"`) {
		t.Fatalf("disabled source's tool page: %s", excerptAround(p.body, "try-it"))
	}
	if res := f.member.post(petTry, url.Values{"arguments": {`{"id": "4"}`}}, true); res.status != http.StatusConflict || !strings.Contains(res.body, "is disabled") {
		t.Errorf("call with the source disabled: %d %s", res.status, excerpt(res.body))
	}
	if got := pets.calls(); len(got) != before+1 {
		t.Errorf("a disabled source's tool reached the upstream: %v", got[before:])
	}
}

// TestTryItPolicies: a call a policy holds answers at once with the
// approval linked in place, and a denied call says why; neither reaches
// the upstream.
func TestTryItPolicies(t *testing.T) {
	f := newFixture(t, peerVars)
	f.allowAll("acme")
	owner := tokenClient(t, f.env, "owner@acme.test")
	pets := newPetsUpstream(t)
	createSource(t, owner, wsSources, map[string]any{"name": "Pets", "type": "openapi",
		"config": map[string]any{"spec": json.RawMessage(fmt.Sprintf(petsSpec, pets.URL))}}, http.StatusCreated)
	f.policy("acme", true, db.PolicyFields{SelectorType: "pattern", Selector: "pets.get_pet", Condition: `args.id == "9"`,
		Effect: "require_approval", Note: "pet 9 is special"})
	f.policy("acme", true, db.PolicyFields{SelectorType: "pattern", Selector: "pets.get_pet", Condition: `args.id == "13"`,
		Effect: "deny", Note: "pet 13 is unlucky"})

	started := time.Now()
	res := f.member.post(petTry, url.Values{"arguments": {`{"id": "9"}`}}, true)
	link := regexp.MustCompile(`href="(/o/acme/w/default/approvals/apr_[a-z0-9]+)" data-testid="try-approval-link"`).FindStringSubmatch(res.body)
	if res.status != http.StatusOK || !strings.Contains(res.body, `data-testid="try-outcome">waiting for approval<`) || link == nil {
		t.Fatalf("held call: %d %s", res.status, excerpt(res.body))
	}
	if took := time.Since(started); took > 30*time.Second {
		t.Errorf("the held call waited %s in a web request", took)
	}
	orgID, wsID, _ := f.acme()
	a, err := f.approvals.Get(context.Background(), orgID, wsID, strings.TrimPrefix(link[1], "/o/acme/w/default/approvals/"))
	if err != nil || a.Status != "pending" || a.Via != "console" || a.UserEmail != "member@acme.test" {
		t.Errorf("approval %+v, %v", a, err)
	}

	res = f.member.post(petTry, url.Values{"arguments": {`{"id": "13"}`}}, true)
	if res.status != http.StatusOK || !strings.Contains(res.body, `data-testid="try-outcome">tool error<`) || !strings.Contains(res.body, "refused") {
		t.Fatalf("denied call: %d %s", res.status, excerpt(res.body))
	}
	if got := pets.calls(); len(got) != 0 {
		t.Errorf("the upstream saw %v", got)
	}
	// Other pets run at once.
	if res := f.member.post(petTry, url.Values{"arguments": {`{"id": "1"}`}}, true); !strings.Contains(res.body, `data-testid="try-outcome">ok<`) {
		t.Errorf("allowed call: %s", excerpt(res.body))
	}
}

func TestTryItHeldCallRunsFromItsApprovalPage(t *testing.T) {
	f := newFixture(t, peerVars)
	f.allowAll("acme")
	owner := tokenClient(t, f.env, "owner@acme.test")
	pets := newPetsUpstream(t)
	createSource(t, owner, wsSources, map[string]any{"name": "Pets", "type": "openapi",
		"config": map[string]any{"spec": json.RawMessage(fmt.Sprintf(petsSpec, pets.URL))}}, http.StatusCreated)
	f.policy("acme", true, db.PolicyFields{SelectorType: "pattern", Selector: "pets.get_pet", Condition: `args.id == "9"`,
		Effect: "require_approval", Note: "pet 9 is special"})

	res := f.member.post(petTry, url.Values{"arguments": {`{"id": "9"}`}}, true)
	link := regexp.MustCompile(`href="(/o/acme/w/default/approvals/apr_[a-z0-9]+)" data-testid="try-approval-link"`).FindStringSubmatch(res.body)
	if res.status != http.StatusOK || link == nil || !strings.Contains(res.body, "Run now") {
		t.Fatalf("held call: %d %s", res.status, excerpt(res.body))
	}
	page := link[1]
	// Pending: nothing to run yet.
	if res := f.member.get(page); res.status != http.StatusOK || strings.Contains(res.body, `data-testid="run-now"`) {
		t.Errorf("pending page: %d, run-now shown %v", res.status, strings.Contains(res.body, `data-testid="run-now"`))
	}
	if res := f.owner.post(page+"/approve", url.Values{"back": {page}}, false); res.status != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", res.status, excerpt(res.body))
	}
	// Only the requester sees Run now, and only they may run it: it runs
	// as them, with their credentials.
	if res := f.member.get(page); !strings.Contains(res.body, `data-testid="run-now"`) {
		t.Errorf("the requester's approved page has no Run now: %s", excerpt(res.body))
	}
	for _, who := range []string{"owner", "admin", "viewer", "outsider"} {
		if res := f.as(who).get(page); strings.Contains(res.body, `data-testid="run-now"`) {
			t.Errorf("%s sees Run now", who)
		}
	}
	for who, want := range map[string]int{"owner": 404, "admin": 404, "viewer": 403, "outsider": 404} {
		if res := f.as(who).post(page+"/run", nil, true); res.status != want {
			t.Errorf("%s runs it: %d, want %d", who, res.status, want)
		}
	}
	if got := pets.calls(); len(got) != 0 {
		t.Fatalf("someone else's run reached the upstream: %v", got)
	}

	res = f.member.post(page+"/run", nil, true)
	if res.status != http.StatusOK || !strings.Contains(res.body, `data-testid="try-outcome">ok<`) || !strings.Contains(res.body, `&#34;name&#34;: &#34;Rex&#34;`) ||
		!strings.Contains(res.body, `data-status="executed"`) || strings.Contains(res.body, `data-testid="run-now"`) {
		t.Fatalf("run now: %d %s", res.status, excerpt(res.body))
	}
	if got := pets.calls(); len(got) != 1 || got[0] != "/pets/9" {
		t.Errorf("the upstream saw %v", got)
	}
	// Running again runs nothing: the stored result.
	if res := f.member.post(page+"/run", nil, false); res.status != http.StatusOK || !strings.Contains(res.body, `&#34;name&#34;: &#34;Rex&#34;`) {
		t.Errorf("second run: %d %s", res.status, excerpt(res.body))
	}
	if got := pets.calls(); len(got) != 1 {
		t.Errorf("the upstream saw %v after a second run", got)
	}
	// The stored result is the requester's alone.
	if res := f.member.get(page); !strings.Contains(res.body, `data-testid="try-result"`) || !strings.Contains(res.body, `&#34;name&#34;: &#34;Rex&#34;`) {
		t.Errorf("the requester's executed page lacks the result: %s", excerpt(res.body))
	}
	if res := f.owner.get(page); res.status != http.StatusOK || strings.Contains(res.body, `data-testid="try-result"`) || strings.Contains(res.body, "Rex") {
		t.Errorf("the owner sees the requester's result: %d", res.status)
	}
}
