package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/worker"
)

// deployToken is an argument an approved call must reach the upstream with,
// intact, though pages only ever show it redacted.
const deployToken = "sk-deploy-7c1e94b2a0"

// TestApprovalSurvivesKilledServers holds an agent's call for approval on
// one `toolgate serve`, SIGKILLs it before anyone decides, approves the
// request through a second server's API, SIGKILLs that one too, and resumes
// on a third: the agent gets the executed result by call_tool with the
// approval id and by get_approval, and the upstream saw exactly one call,
// with the approved arguments.
func TestApprovalSurvivesKilledServers(t *testing.T) {
	h := newHeldCalls(t)
	ctx := context.Background()
	store, place, up := h.store, h.place, h.up

	// Server one: the source is discovered, and the agent's call is held.
	first, addr1 := h.serve(t)
	path := h.toolPath(t, first)
	held := make(chan error, 1)
	progress := make(chan string, 16)
	go func() {
		agent := connectAgent(t, "http://"+addr1+"/mcp", place.key, func(msg string) {
			select {
			case progress <- msg:
			default:
			}
		})
		if agent == nil {
			held <- fmt.Errorf("the agent could not connect")
			return
		}
		params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"path": path,
			"arguments": map[string]any{"body": map[string]any{"environment": "production", "token": deployToken}}}}
		params.SetProgressToken("deploy-1")
		res, err := agent.CallTool(context.Background(), params)
		if err == nil {
			err = errAnswered{resultText(res)}
		}
		held <- err
	}()
	approvalID := waitPendingApproval(t, store, place, first, held)
	// The agent hears, while it waits, which request holds its call.
	select {
	case msg := <-progress:
		if !strings.Contains(msg, approvalID) {
			t.Errorf("progress %q does not name the approval %s", msg, approvalID)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("no progress within 30s of the request\n%s", first.log())
	}
	first.kill(t)
	var answered errAnswered
	if err := <-held; errors.As(err, &answered) {
		t.Fatalf("the held call answered before any decision: %s", answered.text)
	}
	if n := up.calls.Load(); n != 0 {
		t.Fatalf("the upstream saw %d calls before any decision", n)
	}

	// Server two: an approver decides through the API; then it dies too.
	second, addr2 := h.serve(t)
	decided := approveByAPI(t, "http://"+addr2, place, approvalID, "ship it")
	if decided.Status != "approved" || decided.Comment != "ship it" {
		t.Fatalf("the decision answered %+v", decided)
	}
	second.kill(t)

	// Server three: the agent resumes, by call_tool and by get_approval,
	// some of it at once; only the approved arguments ever run, once.
	third, addr3 := h.serve(t)
	agent := connectAgent(t, "http://"+addr3+"/mcp", place.key, nil)
	var wg sync.WaitGroup
	answers := make([]string, 3)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The resume names other arguments: they must be ignored.
			answers[i] = callText(t, agent, "call_tool", map[string]any{"path": path, "approval_id": approvalID,
				"arguments": map[string]any{"body": map[string]any{"environment": "staging"}}})
		}()
	}
	wg.Wait()
	answers = append(answers, callText(t, agent, "get_approval", map[string]any{"approval_id": approvalID}))
	for i, a := range answers {
		if !strings.Contains(a, "dep_1") {
			t.Errorf("answer %d: %q, want the deployment the one execution started\n%s", i, a, third.log())
		}
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want exactly 1", n)
	}
	body := up.body()
	if body["environment"] != "production" || body["token"] != deployToken {
		t.Errorf("the upstream got %v, want the approved arguments intact", body)
	}
	var redacted string
	if err := store.DB().QueryRowContext(ctx, `SELECT CAST(arguments_redacted AS text) FROM approvals WHERE id = $1`, approvalID).Scan(&redacted); err != nil ||
		strings.Contains(redacted, deployToken) || !strings.Contains(redacted, "production") {
		t.Errorf("the approval shows %s (%v), want the arguments with the token redacted", redacted, err)
	}
	var status string
	if err := store.DB().QueryRowContext(ctx, `SELECT status FROM approvals WHERE id = $1`, approvalID).Scan(&status); err != nil || status != "executed" {
		t.Errorf("approval status %q (%v), want executed", status, err)
	}
	for _, p := range []*process{first, second, third} {
		if strings.Contains(p.log(), deployToken) {
			t.Error("the deploy token reached a server's log")
		}
	}
	third.stop(t)
}

// TestHeldCallApprovedOnAnotherServer: an agent's call waits on one server
// while an approver decides through another's API; the waiting call wakes
// (by the decision's notification, or the poll behind it), runs once and
// answers.
func TestHeldCallApprovedOnAnotherServer(t *testing.T) {
	h := newHeldCalls(t)
	waiting, addr1 := h.serve(t)
	deciding, addr2 := h.serve(t)
	path := h.toolPath(t, waiting)
	agent := connectAgent(t, "http://"+addr1+"/mcp", h.place.key, nil)
	if agent == nil {
		t.FailNow()
	}
	answer := make(chan string, 1)
	go func() {
		answer <- callText(t, agent, "call_tool", map[string]any{"path": path,
			"arguments": map[string]any{"body": map[string]any{"environment": "production", "token": deployToken}}})
	}()
	id := waitPendingApproval(t, h.store, h.place, waiting, nil)
	approveByAPI(t, "http://"+addr2, h.place, id, "")
	select {
	case text := <-answer:
		if !strings.Contains(text, "dep_1") {
			t.Errorf("the held call answered %q, want the deployment\n%s", text, waiting.log())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the waiting call did not end within a minute of the decision\n%s", waiting.log())
	}
	if n := h.up.calls.Load(); n != 1 {
		t.Errorf("the upstream saw %d calls, want 1", n)
	}
	waiting.stop(t)
	deciding.stop(t)
}

// heldCalls is a database where every call of one workspace is held for
// approval, the deploy upstream, and what starting `toolgate serve`
// processes on it takes.
type heldCalls struct {
	bin   string
	store *db.Store
	up    *deployUpstream
	place approvalPlace
	env   func(addr string) []string
}

func newHeldCalls(t *testing.T) *heldCalls {
	t.Helper()
	h := &heldCalls{bin: buildBinary(t)}
	dbURL := testenv.DatabaseURL(t)
	meiliURL, meiliKey := testenv.Meili(t)
	indexName := "tools_approval_" + strings.ToLower(rand.Text()[:12])
	t.Cleanup(func() {
		index := search.NewMeili(meiliURL, meiliKey, indexName)
		_ = index.DropIndex(context.Background())
		index.Close()
	})
	var err error
	if h.store, err = db.Open(context.Background(), dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.store.Close)
	h.up = newDeployUpstream(t)
	h.place = newApprovalPlace(t, h.store, h.up.URL)
	ring := testKeys(t) // every server shares the key ring, as replicas do
	h.env = func(addr string) []string {
		return []string{"DATABASE_URL=" + dbURL, "MEILI_URL=" + meiliURL, "MEILI_MASTER_KEY=" + meiliKey,
			"TOOLGATE_MEILI_INDEX=" + indexName, "TOOLGATE_SECRET_KEYS=" + ring, "TOOLGATE_ADDR=" + addr,
			"TOOLGATE_DATA_DIR=" + t.TempDir(), "TOOLGATE_ALLOW_PRIVATE_NETWORKS=true", "TOOLGATE_LOG_FORMAT=json",
			"TOOLGATE_APPROVAL_WAIT=2m"}
	}
	return h
}

// serve starts one more server and waits until it is ready.
func (h *heldCalls) serve(t *testing.T) (*process, string) {
	t.Helper()
	addr := freeAddr(t)
	p := startProcess(t, h.bin, h.env(addr), "serve")
	waitReady(t, "http://"+addr, p.out)
	return p, addr
}

// toolPath waits for the deploy source's discovery and returns its tool.
func (h *heldCalls) toolPath(t *testing.T, server *process) string {
	t.Helper()
	waitSource(t, h.store, h.place.org.ID, h.place.source.ID, func(s db.Source) bool { return s.State == "ready" })
	var path string
	if err := h.store.DB().QueryRowContext(context.Background(), `SELECT path FROM source_tools WHERE source_id = $1`,
		h.place.source.ID).Scan(&path); err != nil {
		t.Fatalf("the deploy tool was not discovered: %v\n%s", err, server.log())
	}
	return path
}

// errAnswered is a held call that answered, which it must not before the
// decision.
type errAnswered struct{ text string }

func (e errAnswered) Error() string { return "answered: " + e.text }

// approvalPlace is an organization whose workspace holds every call for
// approval: an owner who decides, an agent's key owned by a member, and a
// deploy source.
type approvalPlace struct {
	org    db.Organization
	ws     db.Workspace
	source db.Source
	key    string // the agent's API key
	token  string // the owner's personal access token
}

func newApprovalPlace(t *testing.T, store *db.Store, upstreamURL string) approvalPlace {
	t.Helper()
	ctx := context.Background()
	ten := &tenancy.Service{Store: store}
	owner, org, err := ten.CreateAccount(ctx, "owner@example.test", "Owner", "a long enough password", "Held")
	if err != nil {
		t.Fatal(err)
	}
	member, _, err := ten.CreateAccount(ctx, "agent@example.test", "Agent", "a long enough password", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddMember(ctx, store.DB(), org.ID, member.ID, string(auth.Member)); err != nil {
		t.Fatal(err)
	}
	p := approvalPlace{org: *org}
	if p.ws, err = store.CreateWorkspace(ctx, org.ID, "ops", "Ops", 0); err != nil {
		t.Fatal(err)
	}
	if _, p.key, err = ten.CreateAPIKey(ctx, p.ws, member, auth.Member, tenancy.APIKeyInput{Name: "deploy agent"}); err != nil {
		t.Fatal(err)
	}
	if _, p.token, err = ten.CreateToken(ctx, owner.ID, tenancy.TokenInput{Name: "approvals test"}); err != nil {
		t.Fatal(err)
	}
	q, err := worker.NewQueue(store)
	if err != nil {
		t.Fatal(err)
	}
	spec := `{"openapi": "3.0.3", "info": {"title": "Deploys", "version": "1"}, "servers": [{"url": "` + upstreamURL + `"}],
		"paths": {"/deploys": {"post": {"operationId": "createDeploy",
			"requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object",
				"properties": {"environment": {"type": "string"}, "token": {"type": "string"}}}}}},
			"responses": {"201": {"description": "started"}}}}}}`
	cfg, _ := json.Marshal(map[string]json.RawMessage{"spec": json.RawMessage(spec)})
	p.source, err = (&sources.Service{Store: store, Refresher: q}).Create(ctx, org.ID, &p.ws.ID, sources.Input{Name: "Deploys",
		Type: sources.TypeOpenAPI, Scope: sources.ScopeWorkspace, Config: cfg, ActorID: owner.ID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.CreatePolicy(ctx, org.ID, &p.ws.ID, owner.ID, db.PolicyFields{TargetType: "everyone", SelectorType: "all",
		Effect: "require_approval", Enabled: true, ApprovalTTLSeconds: 600, Note: "deploys wait for a person"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deployUpstream is the deploy API: it counts calls and keeps the last body.
type deployUpstream struct {
	*httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	last  map[string]any
}

func newDeployUpstream(t *testing.T) *deployUpstream {
	up := &deployUpstream{}
	up.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/deploys" {
			http.NotFound(w, r)
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		up.mu.Lock()
		up.last = body
		up.mu.Unlock()
		n := up.calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id": "dep_%d", "status": "started"}`, n)
	}))
	t.Cleanup(up.Close)
	return up
}

func (up *deployUpstream) body() map[string]any {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.last
}

// waitPendingApproval waits for the workspace's one pending request.
// A held call that ends first fails the test with its answer.
func waitPendingApproval(t *testing.T, store *db.Store, place approvalPlace, server *process, held <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var id string
		err := store.DB().QueryRowContext(context.Background(), `SELECT id FROM approvals
			WHERE org_id = $1 AND workspace_id = $2 AND status = 'pending'`, place.org.ID, place.ws.ID).Scan(&id)
		if err == nil {
			return id
		}
		select {
		case err := <-held:
			t.Fatalf("the call ended before its approval was requested: %v\n%s", err, server.log())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("no pending approval within a minute\n%s", server.log())
	return ""
}

// connectAgent connects an MCP client with an API key, reporting progress
// messages to onProgress.
func connectAgent(t *testing.T, endpoint, key string, onProgress func(string)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			onProgress(req.Params.Message)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "approvals-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearerTransport(key)}}, nil)
	if err != nil {
		t.Errorf("connect to %s: %v", endpoint, err)
		return nil
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callText calls a meta-tool and returns its text; a tool error fails the
// test.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return ""
	}
	if res.IsError {
		t.Errorf("%s: tool error %s", name, resultText(res))
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// decision is what the approvals API answers.
type decision struct {
	Status  string `json:"status"`
	Comment string `json:"comment"`
}

// approveByAPI approves a request as the owner, with their token.
func approveByAPI(t *testing.T, base string, place approvalPlace, id, comment string) decision {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"comment": comment})
	url := fmt.Sprintf("%s/api/v1/orgs/%s/workspaces/%s/approvals/%s/approve", base, place.org.Slug, place.ws.Slug, id)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+place.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d %s", res.StatusCode, b)
	}
	var d decision
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("approve answered %s: %v", b, err)
	}
	return d
}
