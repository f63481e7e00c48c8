package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/sources"
)

// memberCaller calls from the tenant's first workspace as its member, whom
// the owner may approve.
func (tn tenant) memberCaller() gateway.Caller {
	return gateway.Caller{OrgID: tn.org.ID, WorkspaceID: tn.ws.ID, UserID: tn.member.UserID, Via: gateway.ViaMCP,
		Role: "member", OrgSlug: tn.org.Slug, WorkspaceSlug: tn.ws.Slug}
}

// ownerDecider decides as the tenant's owner.
func (tn tenant) ownerDecider() approvals.Decider {
	return approvals.Decider{UserID: tn.owner.UserID, Role: auth.Owner}
}

// posts counts the createItem requests the upstream received.
func (a *itemsAPI) posts() []string {
	var out []string
	for _, r := range a.requests() {
		if strings.HasPrefix(r, "POST /items") {
			out = append(out, r)
		}
	}
	return out
}

// holdCreate makes the workspace hold every createItem call for approval.
func (e *env) holdCreate(ns string) {
	e.rule(e.a, &e.a.ws, db.PolicyFields{SelectorType: "pattern", Selector: ns + "create_item", Effect: "require_approval",
		Note: "creating items needs a person"})
}

// pending waits until the workspace holds one request, and returns it.
func (e *env) pending(tn tenant) approvals.Approval {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		list, err := e.held.List(context.Background(), tn.org.ID, tn.ws.ID, approvals.Pending, 10)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(list) == 1 {
			return list[0]
		}
		if len(list) > 1 {
			e.t.Fatalf("%d pending requests, want 1", len(list))
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatal("no pending approval within 20 s")
	return approvals.Approval{}
}

// pendingOf reads a held call's pending result.
func pendingOf(t testing.TB, res *mcp.CallToolResult) gateway.PendingResult {
	t.Helper()
	p, ok := res.StructuredContent.(gateway.PendingResult)
	if !ok || res.IsError {
		t.Fatalf("want a pending result, got isError %v, structured %#v, text %s", res.IsError, res.StructuredContent, text(res))
	}
	return p
}

// rowsOf are the audit rows of one approval, in order.
func (r *recorder) rowsOf(id string) []audit.Call {
	var out []audit.Call
	for _, c := range r.all() {
		if c.ApprovalID == id {
			out = append(out, c)
		}
	}
	return out
}

func outcomes(rows []audit.Call) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Outcome
	}
	return out
}

func TestPolicyOrgDenyBeatsWorkspaceAllowAndHides(t *testing.T) {
	e, api, ns := itemsEnv(t)
	ctx := context.Background()
	deny := e.rule(e.a, nil, db.PolicyFields{SelectorType: "pattern", Selector: ns + "get_item", Effect: "deny", Note: "no reading items"})
	if _, err := e.store.MovePolicy(ctx, e.a.org.ID, nil, deny.ID, 0, true); err != nil {
		t.Fatal(err)
	}
	e.rule(e.a, &e.a.ws, db.PolicyFields{Effect: "allow", Note: "the workspace allows everything"})
	c := e.a.caller()

	res := e.call(c, ns+"getItem", `{"id": 7}`)
	if !res.IsError || !strings.Contains(text(res), "refused") || !strings.Contains(text(res), ns+"get_item") {
		t.Fatalf("getItem: isError %v, %s", res.IsError, text(res))
	}
	if row := e.rec.last(t); row.Outcome != audit.OutcomeDenied || !strings.Contains(row.Error, "refused") || row.SourceID == "" {
		t.Errorf("audit row %+v", row)
	}
	if got := api.requests(); len(got) != 0 {
		t.Errorf("the upstream saw %q", got)
	}
	// The rest of the source is still allowed.
	if res := e.call(c, ns+"whoami", `{}`); res.IsError {
		t.Errorf("whoami: %s", text(res))
	}

	// Denied whatever the arguments: hidden from listings, search and describe.
	list, err := e.gw.List(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(list))
	for i, tool := range list {
		paths[i] = tool.Path
	}
	if slices.Contains(paths, ns+"get_item") || !slices.Contains(paths, ns+"create_item") {
		t.Errorf("List shows %v", paths)
	}
	hits, err := e.gw.Search(ctx, c, "get item", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Path == ns+"get_item" {
			t.Errorf("search shows the denied tool: %+v", hits)
		}
	}
	if len(hits) == 0 {
		t.Error("search found nothing at all")
	}
	var nf *gateway.NotFoundError
	if _, err := e.gw.Describe(ctx, c, ns+"getItem"); !errors.As(err, &nf) {
		t.Errorf("describe of a denied tool: %v", err)
	}
	d, err := e.gw.Describe(ctx, c, ns+"createItem")
	if err != nil || !strings.HasPrefix(d.Policy, "allowed") {
		t.Errorf("describe createItem: policy %q, %v", d.Policy, err)
	}

	// The other tenant's rules do not reach this one, and the other way round.
	ws2 := gateway.Caller{OrgID: e.b.org.ID, WorkspaceID: e.b.ws.ID, UserID: e.b.owner.UserID, Via: gateway.ViaConsole, Role: "owner"}
	if _, err := e.gw.Call(ctx, ws2, ns+"getItem", json.RawMessage(`{"id": 1}`), nil); !errors.As(err, &nf) {
		t.Errorf("tenant b sees tenant a's tool: %v", err)
	}
}

func TestApprovalApprovedDuringWaitRunsOnceWithApprovedArguments(t *testing.T) {
	e, api, ns := itemsEnv(t)
	e.holdCreate(ns)
	c := e.a.memberCaller()
	ctx := context.Background()

	d, err := e.gw.Describe(ctx, c, ns+"createItem")
	if err != nil || !strings.HasPrefix(d.Policy, "approval required") {
		t.Errorf("describe: policy %q, %v", d.Policy, err)
	}

	progressed := make(chan string, 100)
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.gw.Call(ctx, c, ns+"createItem", json.RawMessage(`{"body": {"name": "kettle", "count": 2, "password": "hunter2-secret"}}`),
			func(progress, total float64, message string) {
				select {
				case progressed <- message:
				default:
				}
			})
		done <- outcome{res, err}
	}()
	a := e.pending(e.a)
	if a.Tool != ns+"create_item" || strings.Contains(string(a.Arguments), "hunter2") || !strings.Contains(string(a.Arguments), "kettle") {
		t.Errorf("approval %+v arguments %s", a, a.Arguments)
	}
	if a.Reason == "" || a.PolicyID == nil || a.UserID == nil || *a.UserID != e.a.member.UserID {
		t.Errorf("approval %+v", a)
	}
	// The call reports its wait before anyone decides.
	select {
	case msg := <-progressed:
		if !strings.Contains(msg, "waiting for approval "+a.ID) {
			t.Errorf("progress %q", msg)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no progress while waiting")
	}
	if len(api.posts()) != 0 {
		t.Fatalf("the upstream was called before the approval: %q", api.posts())
	}
	// The caller may not approve their own request.
	var de *approvals.DecisionError
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, a.ID, approvals.Decider{UserID: e.a.member.UserID, Role: auth.Member}, true, ""); !errors.As(err, &de) {
		t.Errorf("self-approval: %v", err)
	}
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, a.ID, e.a.ownerDecider(), true, "fine"); err != nil {
		t.Fatal(err)
	}
	var got outcome
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the held call did not return after the approval")
	}
	if got.err != nil || got.res.IsError || !strings.Contains(text(got.res), `"name": "kettle"`) {
		t.Fatalf("held call: %v %s", got.err, text(got.res))
	}
	if posts := api.posts(); len(posts) != 1 || posts[0] != "POST /items key="+itemsKey {
		t.Errorf("upstream posts %q", posts)
	}
	rows := e.rec.rowsOf(a.ID)
	if diff := outcomes(rows); !slices.Equal(diff, []string{audit.OutcomePending, audit.OutcomeOK}) {
		t.Errorf("audit rows of the approval: %v", diff)
	}
	for _, r := range rows {
		if strings.Contains(string(r.Arguments), "hunter2") || r.UserID != e.a.member.UserID {
			t.Errorf("audit row %+v", r)
		}
	}

	// A second approval changes nothing and runs nothing.
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, a.ID, e.a.ownerDecider(), true, "again"); !errors.As(err, &de) || de.Code != "not_pending" {
		t.Errorf("second approval: %v", err)
	}
	// Resuming returns the stored result; the upstream is not called again.
	res, err := e.gw.Resume(ctx, c, a.ID, "", nil, nil)
	if err != nil || res.IsError || !strings.Contains(text(res), `"name": "kettle"`) {
		t.Fatalf("resume: %v %s", err, text(res))
	}
	if posts := api.posts(); len(posts) != 1 {
		t.Errorf("upstream posts after resume %q", posts)
	}
}

// shortWait makes held calls answer with their pending handle quickly.
func shortWait(o *gateway.Options) { o.ApprovalWait = 100 * time.Millisecond }

func TestApprovalPendingThenResume(t *testing.T) {
	e, api, ns := itemsEnv(t, shortWait)
	e.holdCreate(ns)
	c := e.a.memberCaller()
	ctx := context.Background()

	res := e.call(c, ns+"createItem", `{"body": {"name": "kettle", "count": 2}}`)
	p := pendingOf(t, res)
	if p.Status != "pending" || !strings.HasPrefix(p.ApprovalID, "apr_") || p.Tool != ns+"create_item" ||
		p.URL != "https://toolgate.test/o/"+e.a.org.Slug+"/w/"+e.a.ws.Slug+"/approvals/"+p.ApprovalID || p.ExpiresAt.Before(time.Now()) {
		t.Errorf("pending %+v", p)
	}
	if !strings.Contains(text(res), "get_approval") || !strings.Contains(text(res), p.ApprovalID) {
		t.Errorf("pending text %s", text(res))
	}
	if rows := e.rec.rowsOf(p.ApprovalID); !slices.Equal(outcomes(rows), []string{audit.OutcomePending}) {
		t.Errorf("audit rows %v", outcomes(rows))
	}

	// Still pending: the same answer again.
	res, err := e.gw.Resume(ctx, c, p.ApprovalID, ns+"createItem", nil, nil)
	if err != nil || pendingOf(t, res).ApprovalID != p.ApprovalID {
		t.Fatalf("resume while pending: %v", err)
	}

	// Another workspace or organization does not find it.
	var anf *gateway.ApprovalNotFoundError
	other := c
	other.WorkspaceID = e.a.ws2.ID
	if _, err := e.gw.Resume(ctx, other, p.ApprovalID, "", nil, nil); !errors.As(err, &anf) {
		t.Errorf("another workspace: %v", err)
	}
	stranger := gateway.Caller{OrgID: e.b.org.ID, WorkspaceID: e.b.ws.ID, UserID: e.b.owner.UserID, Via: gateway.ViaMCP, Role: "owner"}
	if _, err := e.gw.Resume(ctx, stranger, p.ApprovalID, "", nil, nil); !errors.As(err, &anf) {
		t.Errorf("another organization: %v", err)
	}
	// A path that names another tool is refused.
	if res, err := e.gw.Resume(ctx, c, p.ApprovalID, ns+"whoami", nil, nil); err != nil || !res.IsError || !strings.Contains(text(res), "is for a call to") {
		t.Errorf("resume with another path: %v %s", err, text(res))
	}

	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID, e.a.ownerDecider(), true, ""); err != nil {
		t.Fatal(err)
	}
	// call_tool with the approval id and other arguments: the approved ones run.
	res, err = e.gw.Resume(ctx, c, p.ApprovalID, ns+"createItem", json.RawMessage(`{"body": {"name": "anvil", "count": 9}}`), nil)
	if err != nil || res.IsError || !strings.Contains(text(res), `"name": "kettle"`) || !strings.Contains(text(res), "differ from the approved ones") {
		t.Fatalf("resume after approval: %v %s", err, text(res))
	}
	if posts := api.posts(); len(posts) != 1 {
		t.Errorf("upstream posts %q", posts)
	}
	// get_approval later: the stored result, nothing runs again.
	res, err = e.gw.Resume(ctx, c, p.ApprovalID, "", nil, nil)
	if err != nil || res.IsError || !strings.Contains(text(res), `"name": "kettle"`) || strings.Contains(text(res), "differ") {
		t.Fatalf("get_approval: %v %s", err, text(res))
	}
	if posts := api.posts(); len(posts) != 1 {
		t.Errorf("upstream posts %q", posts)
	}
	if rows := e.rec.rowsOf(p.ApprovalID); !slices.Equal(outcomes(rows), []string{audit.OutcomePending, audit.OutcomeOK}) {
		t.Errorf("audit rows %v", outcomes(rows))
	}
}

func TestApprovalDenied(t *testing.T) {
	e, api, ns := itemsEnv(t)
	e.holdCreate(ns)
	c := e.a.memberCaller()
	ctx := context.Background()

	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- e.call(c, ns+"createItem", `{"body": {"name": "kettle", "count": 2}}`) }()
	a := e.pending(e.a)
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, a.ID, e.a.ownerDecider(), false, "not on a Sunday"); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if !res.IsError || !strings.Contains(text(res), "denied") || !strings.Contains(text(res), "not on a Sunday") {
		t.Fatalf("denied call: %s", text(res))
	}
	if rows := e.rec.rowsOf(a.ID); !slices.Equal(outcomes(rows), []string{audit.OutcomePending, audit.OutcomeDenied}) {
		t.Errorf("audit rows %v", outcomes(rows))
	}
	// Asking again says the same; nothing ran.
	res, err := e.gw.Resume(ctx, c, a.ID, "", nil, nil)
	if err != nil || !res.IsError || !strings.Contains(text(res), "not on a Sunday") {
		t.Errorf("resume a denied call: %v %s", err, text(res))
	}
	if posts := api.posts(); len(posts) != 0 {
		t.Errorf("upstream posts %q", posts)
	}
}

func TestApprovalExpired(t *testing.T) {
	e, api, ns := itemsEnv(t, shortWait)
	e.holdCreate(ns)
	c := e.a.memberCaller()
	ctx := context.Background()

	p := pendingOf(t, e.call(c, ns+"createItem", `{"body": {"name": "kettle", "count": 2}}`))
	// Nobody decided within its time.
	if _, err := e.store.DB().ExecContext(ctx, `UPDATE approvals SET requested_at = now() - interval '20 minutes',
		expires_at = now() - interval '10 minutes' WHERE org_id = $1 AND id = $2`, e.a.org.ID, p.ApprovalID); err != nil {
		t.Fatal(err)
	}
	res, err := e.gw.Resume(ctx, c, p.ApprovalID, "", nil, nil)
	if err != nil || !res.IsError || !strings.Contains(text(res), "expired") {
		t.Fatalf("resume an expired call: %v %s", err, text(res))
	}
	var de *approvals.DecisionError
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID, e.a.ownerDecider(), true, ""); !errors.As(err, &de) {
		t.Errorf("approving an expired request: %v", err)
	}
	if posts := api.posts(); len(posts) != 0 {
		t.Errorf("upstream posts %q", posts)
	}
}

// TestApprovalAcrossReplicasAndRestart holds a call on one replica that
// then stops, has it approved through another, and resumes it from two
// fresh replicas at once: the upstream is called exactly once and both
// get the result.
func TestApprovalAcrossReplicasAndRestart(t *testing.T) {
	e, api, ns := itemsEnv(t, shortWait)
	e.holdCreate(ns)
	c := e.a.memberCaller()
	ctx := context.Background()

	// The first replica holds the call, then stops; the decision is made
	// while it is down.
	first := e.opts
	first.Approvals = e.newApprovals()
	gw1 := gateway.New(first)
	res, err := gw1.Call(ctx, c, ns+"createItem", json.RawMessage(`{"body": {"name": "kettle", "count": 2}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := pendingOf(t, res)
	if err := gw1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	first.Approvals.Close()
	decider := e.newApprovals()
	if _, err := decider.Decide(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID, e.a.ownerDecider(), true, "go"); err != nil {
		t.Fatal(err)
	}
	// Two new replicas, each with its own approvals service, resume at once.
	var replicas []*gateway.Gateway
	for range 2 {
		o := e.opts
		o.Approvals, o.ApprovalWait = e.newApprovals(), 30*time.Second
		gw := gateway.New(o)
		t.Cleanup(func() { _ = gw.Close(context.Background()) })
		replicas = append(replicas, gw)
	}
	var wg sync.WaitGroup
	results := make([]string, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := replicas[i%2].Resume(ctx, c, p.ApprovalID, "", nil, nil)
			if err != nil {
				results[i] = "error: " + err.Error()
				return
			}
			results[i] = text(res)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if !strings.Contains(r, `"name": "kettle"`) {
			t.Errorf("resume %d: %s", i, r)
		}
	}
	if posts := api.posts(); len(posts) != 1 {
		t.Errorf("upstream posts %q, want exactly one", posts)
	}
	a, err := decider.Get(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID)
	if err != nil || a.Status != approvals.Executed {
		t.Errorf("approval %+v, %v", a, err)
	}
}

func TestApprovalResumedOnlyByItsRequester(t *testing.T) {
	e, api, ns := itemsEnv(t, shortWait)
	e.holdCreate(ns)
	ctx := context.Background()
	// Resume does not store the key, so made-up key ids stand for the
	// requester's second key and the owner's key.
	key2, ownerKey := int64(102), int64(103)
	c := e.a.memberCaller()
	// The owner's agent key in the same workspace: it sees the approval id
	// on the console, but may neither run the call nor read its result.
	intruder := gateway.Caller{OrgID: e.a.org.ID, WorkspaceID: e.a.ws.ID, UserID: e.a.owner.UserID, KeyID: &ownerKey,
		Via: gateway.ViaMCP, Role: "owner"}

	p := pendingOf(t, e.call(c, ns+"createItem", `{"body": {"name": "kettle", "count": 2}}`))
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID, e.a.ownerDecider(), true, ""); err != nil {
		t.Fatal(err)
	}
	var anf *gateway.ApprovalNotFoundError
	for _, path := range []string{"", ns + "createItem"} { // get_approval, call_tool with approval_id
		if res, err := e.gw.Resume(ctx, intruder, p.ApprovalID, path, nil, nil); !errors.As(err, &anf) {
			t.Errorf("another member's key resumed (path %q): %v %s", path, err, text(res))
		}
	}
	if posts := api.posts(); len(posts) != 0 {
		t.Fatalf("another member's key ran the call: %q", posts)
	}
	// The requester's other key runs it once.
	other := c
	other.KeyID = &key2
	res, err := e.gw.Resume(ctx, other, p.ApprovalID, "", nil, nil)
	if err != nil || res.IsError || !strings.Contains(text(res), `"name": "kettle"`) {
		t.Fatalf("the requester's other key: %v %s", err, text(res))
	}
	if posts := api.posts(); len(posts) != 1 {
		t.Errorf("upstream posts %q", posts)
	}
	// The stored result is not given to another member either.
	for _, path := range []string{"", ns + "createItem"} {
		if res, err := e.gw.Resume(ctx, intruder, p.ApprovalID, path, nil, nil); !errors.As(err, &anf) {
			t.Errorf("another member read the result (path %q): %v %s", path, err, text(res))
		}
	}
	if res, err := e.gw.Resume(ctx, c, p.ApprovalID, "", nil, nil); err != nil || !strings.Contains(text(res), `"name": "kettle"`) {
		t.Errorf("the requester's stored result: %v %s", err, text(res))
	}
}

func TestApprovalRequesterWhoLeftDoesNotRun(t *testing.T) {
	e, api, ns := itemsEnv(t, shortWait)
	e.holdCreate(ns)
	ctx := context.Background()
	c := e.a.memberCaller()
	p := pendingOf(t, e.call(c, ns+"createItem", `{"body": {"name": "kettle", "count": 2}}`))
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID, e.a.ownerDecider(), true, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.store.RemoveMember(ctx, e.a.org.ID, e.a.member.UserID, 0); err != nil {
		t.Fatal(err)
	}
	res, err := e.gw.Resume(ctx, c, p.ApprovalID, "", nil, nil)
	if err != nil || !res.IsError || !strings.Contains(text(res), "no longer a member") {
		t.Fatalf("resume after leaving: %v %s", err, text(res))
	}
	if posts := api.posts(); len(posts) != 0 {
		t.Errorf("the call ran for a former member: %q", posts)
	}
	a, err := e.held.Get(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID)
	if err != nil || a.Status != approvals.Executed {
		t.Errorf("approval after the refusal: %v %+v", err, a)
	}
}

func TestApprovalRefusedWhenItsSourceWasRecreated(t *testing.T) {
	e, api, ns := itemsEnv(t, shortWait)
	e.holdCreate(ns)
	ctx := context.Background()
	c := e.a.memberCaller()
	p := pendingOf(t, e.call(c, ns+"createItem", `{"body": {"name": "kettle", "count": 2}}`))
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID, e.a.ownerDecider(), true, ""); err != nil {
		t.Fatal(err)
	}
	a, err := e.held.Get(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	old, err := e.store.Source(ctx, e.a.org.ID, a.SourceID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sources.Delete(ctx, old, 0); err != nil {
		t.Fatal(err)
	}
	src := e.source(e.a, &e.a.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	if src.ID == old.ID {
		t.Fatalf("the re-created source kept its id %s", src.ID)
	}
	e.credential(e.a, &e.a.ws, e.a.owner, src, credentials.ScopeWorkspace,
		credentials.Auth{Type: credentials.TypeAPIKey, In: "header", Name: "X-Api-Key"}, credentials.Secret{Value: itemsKey})

	res, err := e.gw.Resume(ctx, c, p.ApprovalID, "", nil, nil)
	if err != nil || !res.IsError || !strings.Contains(text(res), "source changed since the approval") {
		t.Fatalf("resume after the source was re-created: %v %s", err, text(res))
	}
	if posts := api.posts(); len(posts) != 0 {
		t.Errorf("the call ran against the new source: %q", posts)
	}
	// The refusal is the stored outcome: asking again says the same.
	if res, err := e.gw.Resume(ctx, c, p.ApprovalID, "", nil, nil); err != nil || !strings.Contains(text(res), "source changed") {
		t.Errorf("second resume: %v %s", err, text(res))
	}
}

func TestApprovalApprovedButNotRunInTimeExpires(t *testing.T) {
	e, api, ns := itemsEnv(t, shortWait)
	e.holdCreate(ns)
	ctx := context.Background()
	c := e.a.memberCaller()
	p := pendingOf(t, e.call(c, ns+"createItem", `{"body": {"name": "kettle", "count": 2}}`))
	if _, err := e.held.Decide(ctx, e.a.org.ID, e.a.ws.ID, p.ApprovalID, e.a.ownerDecider(), true, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.DB().ExecContext(ctx, `UPDATE approvals SET requested_at = now() - interval '2 hours',
		expires_at = now() - interval '1 second' WHERE id = $1`, p.ApprovalID); err != nil {
		t.Fatal(err)
	}
	if err := e.held.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.gw.Resume(ctx, c, p.ApprovalID, "", nil, nil)
	if err != nil || !res.IsError || !strings.Contains(text(res), "was approved, but nobody ran it before approval "+p.ApprovalID+" expired") {
		t.Fatalf("resume after expiry: %v %s", err, text(res))
	}
	if posts := api.posts(); len(posts) != 0 {
		t.Errorf("an expired approval ran: %q", posts)
	}
}
