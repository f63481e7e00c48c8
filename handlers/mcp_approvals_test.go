package handlers_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
)

// allowAll gives an organization a rule that allows every call: tools that
// write default to needing approval, and most tests call them freely.
func (e *env) allowAll(orgSlug string) {
	e.t.Helper()
	e.policy(orgSlug, false, db.PolicyFields{Effect: "allow", Note: "tests call every tool"})
}

// policy stores a rule of an organization, or of its default workspace.
func (e *env) policy(orgSlug string, workspace bool, f db.PolicyFields) db.Policy {
	e.t.Helper()
	ctx := context.Background()
	org, err := e.store.OrganizationBySlug(ctx, orgSlug)
	if err != nil {
		e.t.Fatal(err)
	}
	var wsID *int64
	if workspace {
		ws, err := e.store.WorkspaceBySlug(ctx, org.ID, "default")
		if err != nil {
			e.t.Fatal(err)
		}
		wsID = &ws.ID
	}
	if f.TargetType == "" {
		f.TargetType = "everyone"
	}
	if f.SelectorType == "" {
		f.SelectorType = "all"
	}
	if f.ApprovalTTLSeconds == 0 {
		f.ApprovalTTLSeconds = 600
	}
	f.Enabled = true
	var by int64
	if err := e.store.DB().QueryRowContext(ctx, `SELECT user_id FROM memberships WHERE org_id = $1 AND role = 'owner' LIMIT 1`, org.ID).Scan(&by); err != nil {
		e.t.Fatal(err)
	}
	p, err := e.store.CreatePolicy(ctx, org.ID, wsID, by, f)
	if err != nil {
		e.t.Fatalf("create policy: %v", err)
	}
	return p
}

// acme is Acme's organization and default workspace ids.
func (e *env) acme() (orgID, wsID int64, owner approvals.Decider) {
	e.t.Helper()
	ctx := context.Background()
	org, err := e.store.OrganizationBySlug(ctx, "acme")
	if err != nil {
		e.t.Fatal(err)
	}
	ws, err := e.store.WorkspaceBySlug(ctx, org.ID, "default")
	if err != nil {
		e.t.Fatal(err)
	}
	var ownerID int64
	if err := e.store.DB().QueryRowContext(ctx, `SELECT id FROM users WHERE email = 'owner@acme.test'`).Scan(&ownerID); err != nil {
		e.t.Fatal(err)
	}
	return org.ID, ws.ID, approvals.Decider{UserID: ownerID, Role: auth.Owner}
}

// holdWrites makes Acme's default workspace hold every call that is not a
// GET for a person's approval: a CEL condition on the tool's method.
func (f *mcpFixture) holdWrites() {
	f.policy("acme", true, db.PolicyFields{Condition: `tool.method != "GET"`, Effect: "require_approval", Note: "writes need a person"})
}

// pendingApproval waits until Acme's default workspace holds one request.
func (f *mcpFixture) pendingApproval(t *testing.T) approvals.Approval {
	t.Helper()
	orgID, wsID, _ := f.acme()
	var a approvals.Approval
	waitFor(t, "a pending approval", func() bool {
		list, err := f.approvals.List(context.Background(), orgID, wsID, approvals.Pending, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			a = list[0]
		}
		return len(list) > 0
	})
	return a
}

func (f *mcpFixture) posts() int {
	n := 0
	for _, r := range f.api.requests() {
		if strings.HasPrefix(r, "POST ") {
			n++
		}
	}
	return n
}

// TestMCPHeldCallApprovedWhileWaiting: call_tool waits for the decision,
// sending progress, and returns the tool's result once a person approves.
func TestMCPHeldCallApprovedWhileWaiting(t *testing.T) {
	f := newMCPFixture(t)
	f.holdWrites()
	var progress atomic.Int32
	firstProgress := make(chan string, 1)
	cs := connect(t, f.srv.URL+"/mcp", f.acmeKey.Key, "2025-11-25", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if progress.Add(1) == 1 {
				firstProgress <- req.Params.Message
			}
		},
	})
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"path": "notes.notes.create_note",
			"arguments": map[string]any{"body": map[string]any{"text": "held note"}}}}
		params.SetProgressToken("held-1")
		res, err := cs.CallTool(context.Background(), params)
		done <- answer{res, err}
	}()
	a := f.pendingApproval(t)
	if a.Tool != "notes.notes.create_note" || a.KeyName != "agent" || a.UserEmail != "member@acme.test" {
		t.Errorf("approval %+v", a)
	}
	select {
	case msg := <-firstProgress:
		if !strings.Contains(msg, "waiting for approval "+a.ID) {
			t.Errorf("progress message %q", msg)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no progress notification while the call waited")
	}
	if n := f.posts(); n != 0 {
		t.Fatalf("the upstream was called %d times before the approval", n)
	}
	orgID, wsID, owner := f.acme()
	if _, err := f.approvals.Decide(context.Background(), orgID, wsID, a.ID, owner, true, "looks fine"); err != nil {
		t.Fatal(err)
	}
	var got answer
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("call_tool did not return after the approval")
	}
	if got.err != nil || got.res.IsError {
		t.Fatalf("call_tool: %v %+v", got.err, got.res)
	}
	b, _ := json.Marshal(got.res.Content)
	if !strings.Contains(string(b), "held note") {
		t.Errorf("result %s", b)
	}
	if progress.Load() == 0 || f.posts() != 1 {
		t.Errorf("progress notifications %d, upstream posts %d", progress.Load(), f.posts())
	}
}

// TestMCPHeldCallPendingThenGetApproval: with a short wait the agent gets
// a pending result, and get_approval after the approval returns the
// result; the upstream runs once.
func TestMCPHeldCallPendingThenGetApproval(t *testing.T) {
	f := newMCPFixtureWith(t, map[string]string{"TOOLGATE_APPROVAL_WAIT": "300ms"})
	f.holdWrites()
	cs := connect(t, f.srv.URL+"/mcp", f.acmeKey.Key, "2025-11-25", nil)

	res, text := callText(t, cs, "call_tool", map[string]any{"path": "notes.notes.create_note",
		"arguments": map[string]any{"body": map[string]any{"text": "later"}}})
	var pending struct {
		Status, ApprovalID, URL string
		ExpiresAt               time.Time
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &struct {
		Status     *string    `json:"status"`
		ApprovalID *string    `json:"approval_id"`
		URL        *string    `json:"url"`
		ExpiresAt  *time.Time `json:"expires_at"`
	}{&pending.Status, &pending.ApprovalID, &pending.URL, &pending.ExpiresAt}); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	if res.IsError || pending.Status != "pending" || !strings.HasPrefix(pending.ApprovalID, "apr_") ||
		pending.URL != f.srv.URL+"/o/acme/w/default/approvals/"+pending.ApprovalID && !strings.HasSuffix(pending.URL, "/o/acme/w/default/approvals/"+pending.ApprovalID) ||
		pending.ExpiresAt.Before(time.Now()) || !strings.Contains(text, "get_approval") {
		t.Fatalf("pending result: isError %v, %s, %s", res.IsError, b, text)
	}

	// Still undecided: pending again.
	res, _ = callText(t, cs, "get_approval", map[string]any{"approval_id": pending.ApprovalID})
	if b, _ := json.Marshal(res.StructuredContent); res.IsError || !strings.Contains(string(b), `"status":"pending"`) {
		t.Fatalf("get_approval while pending: %s", b)
	}
	// Another organization's key does not find it.
	other := connect(t, f.srv.URL+"/mcp", f.globexKey.Key, "2025-11-25", nil)
	if res, text := callText(t, other, "get_approval", map[string]any{"approval_id": pending.ApprovalID}); !res.IsError || !strings.Contains(text, "no approval") {
		t.Errorf("globex's get_approval: %s", text)
	}

	orgID, wsID, owner := f.acme()
	if _, err := f.approvals.Decide(context.Background(), orgID, wsID, pending.ApprovalID, owner, true, ""); err != nil {
		t.Fatal(err)
	}
	res, text = callText(t, cs, "get_approval", map[string]any{"approval_id": pending.ApprovalID})
	if res.IsError || !strings.Contains(text, "later") {
		t.Fatalf("get_approval after approval: %s", text)
	}
	// call_tool with the approval id, from a direct-mode session: the same
	// result, nothing runs again.
	direct := connect(t, f.srv.URL+"/mcp", f.acmeDirect.Key, "2025-11-25", nil)
	res, text = callText(t, direct, "get_approval", map[string]any{"approval_id": pending.ApprovalID})
	if res.IsError || !strings.Contains(text, "later") {
		t.Fatalf("direct mode get_approval: %s", text)
	}
	res, text = callText(t, cs, "call_tool", map[string]any{"path": "notes.notes.create_note", "approval_id": pending.ApprovalID})
	if res.IsError || !strings.Contains(text, "later") {
		t.Fatalf("call_tool with approval_id: %s", text)
	}
	if n := f.posts(); n != 1 {
		t.Errorf("upstream posts %d, want 1", n)
	}
}

// TestMCPPoliciesPerCaller: direct mode's shared tool list is filtered per
// caller, search hides denied tools, and a denied call says why.
func TestMCPPoliciesPerCaller(t *testing.T) {
	f := newMCPFixture(t)
	f.policy("acme", true, db.PolicyFields{TargetType: "role", TargetRole: "member", SelectorType: "pattern",
		Selector: "notes.notes.get_note", Effect: "deny", Note: "members may not read notes"})
	ownerDirect := createKey(t, f.owner, acmeKeys, map[string]any{"name": "owner direct", "mode": "direct"})

	names := func(key string) map[string]bool {
		cs := connect(t, f.srv.URL+"/mcp", key, "2025-11-25", nil)
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tool := range list.Tools {
			out[tool.Name] = true
		}
		return out
	}
	if got := names(f.acmeDirect.Key); got["notes__notes__get_note"] || !got["notes__notes__create_note"] || !got["get_approval"] {
		t.Errorf("the member's direct list: %v", got)
	}
	if got := names(ownerDirect.Key); !got["notes__notes__get_note"] || !got["notes__notes__create_note"] {
		t.Errorf("the owner's direct list: %v", got)
	}

	cs := connect(t, f.srv.URL+"/mcp", f.acmeKey.Key, "2025-11-25", nil)
	_, text := callText(t, cs, "search_tools", map[string]any{"query": "note"})
	if strings.Contains(text, "get_note") || !strings.Contains(text, "create_note") {
		t.Errorf("search: %s", text)
	}
	if res, text := callText(t, cs, "describe_tool", map[string]any{"path": "notes.notes.get_note"}); !res.IsError {
		t.Errorf("describe of a denied tool: %s", text)
	}
	res, text := callText(t, cs, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 1}})
	if !res.IsError || !strings.Contains(text, "refused") {
		t.Errorf("denied call: %s", text)
	}
	if len(f.api.requests()) != 0 {
		t.Errorf("the upstream saw %v", f.api.requests())
	}
}
