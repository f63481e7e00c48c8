package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/approvals"
)

// TestBrowserApproval walks an approval end to end: an agent (the Go SDK's
// MCP client with a member's key) calls a tool that a workspace rule holds
// and waits on call_tool; an approver, signed in to the console in a real
// browser, sees the request appear on the Approvals page without a reload
// and the sidebar's badge count it, types a comment (kept while the list
// refreshes for another request) and approves; the agent's call_tool
// returns the tool's result, the upstream sees the call once, the badge
// goes back to zero and the request's page says who approved. Screenshots
// go to OutputDir/approvals.
func TestBrowserApproval(t *testing.T) {
	vars := map[string]string{"TOOLGATE_APPROVAL_WAIT": "3m"}
	for k, v := range peerVars {
		vars[k] = v
	}
	f := newFixture(t, vars)
	f.join(f.account("approver@acme.test", ""), "acme", "member")
	orgID, wsID := f.tenantIDs("acme", "default")
	notes := newNotesAPI(t)
	createSource(t, f.owner, wsSources, map[string]any{"name": "Notes", "type": "openapi",
		"config": map[string]any{"spec": json.RawMessage(fmt.Sprintf(notesSpec, notes.URL))}}, 201)
	rule := f.owner.api("POST", "/api/v1/orgs/acme/workspaces/default/policies", map[string]any{
		"target_type": "everyone", "selector_type": "pattern", "selector": "notes.notes.create_note",
		"effect": "require_approval", "note": "Writing a note needs a person"})
	if rule.status != 201 {
		t.Fatalf("rule: %d %s", rule.status, rule.body)
	}
	var created struct {
		ID int64 `json:"id"`
	}
	rule.json(t, &created)
	key := createKey(t, f.member, acmeKeys, map[string]any{"name": "writer"})

	// Generous: under a full parallel test run on two cores chromium is slow.
	browserCtx, shots := startBrowser(t, 6*time.Minute, "approvals")
	// The owner gives the member the workspace's approver role on the
	// settings page; a viewer is refused in place first.
	owner := newTab(t, browserCtx, f.srv.URL, shots)
	owner.signIn("owner@acme.test")
	owner.open("/o/acme/w/default/settings")
	owner.wantVisible(testid("no-approvers"))
	viewerID := strconv.FormatInt(f.userID("viewer@acme.test"), 10)
	owner.do("offer the viewer anyway", chromedp.Evaluate[chromedp.Void](`(function (s) { var o = document.createElement('option'); o.value = `+jsString(viewerID)+`; o.text = 'viewer'; s.add(o) })(document.querySelector('#approvers select'))`))
	owner.pick(testid("approvers")+" "+testid("field-user_id"), viewerID)
	owner.click(testid("add-approver"))
	owner.waitText(testid("approvers")+" "+testid("error-user_id"), "viewers cannot decide approvals")
	owner.pick(testid("approvers")+" "+testid("field-user_id"), strconv.FormatInt(f.userID("approver@acme.test"), 10))
	owner.clickAndLoad(testid("add-approver"))
	owner.wantText(testid("flash"), "Approver added: they can now decide this workspace's approval requests.")
	owner.wantVisible(testid("approver-" + strconv.FormatInt(f.userID("approver@acme.test"), 10)))
	owner.shot("00-approver-added")

	b := newTab(t, browserCtx, f.srv.URL, shots)

	// The approver signs in and opens the Approvals page: nothing waits.
	b.signIn("approver@acme.test")
	b.wantPath("/o/acme/w/default")
	b.clickAndLoad(testid("nav-approvals"))
	b.wantPath("/o/acme/w/default/approvals")
	b.wantText(testid("empty")+" h2", "Nothing waits for a decision")
	b.waitAttr(testid("pending-badge"), "data-count", "0")
	b.shot("01-empty")
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.toolgateNoReload = true`))

	// The agent calls the held tool and waits.
	cs := connect(t, f.srv.URL+"/mcp", key.Key, "", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{
			"path": "notes.notes.create_note", "arguments": map[string]any{"body": map[string]any{"text": "hello from the agent"}}}})
		done <- outcome{res, err}
	}()

	// The request appears without a reload, and the badge counts it.
	b.waitText(testid("approval-tool"), "notes.notes.create_note")
	b.waitAttr(testid("pending-badge"), "data-count", "1")
	b.wantText(testid("approval-rule"), "Workspace rule: Writing a note needs a person")
	if href := b.attr(testid("approval-rule")+" a", "href"); href != "/o/acme/w/default/policies/"+strconv.FormatInt(created.ID, 10)+"/edit" {
		t.Fatalf("rule link %q", href)
	}
	b.waitText(testid("approval-arguments"), `"text": "hello from the agent"`)
	b.waitText(testid("approval-caller"), "writer · member@acme.test")
	id := b.attr(testid("approval"), "data-id")
	if !strings.HasPrefix(id, "apr_") {
		t.Fatalf("approval id %q", id)
	}
	if len(notes.requests()) != 0 {
		t.Fatalf("the held call reached the upstream: %v", notes.requests())
	}
	select {
	case o := <-done:
		t.Fatalf("call_tool returned before the decision: %+v %v", o.res, o.err)
	default:
	}
	b.shot("02-request-appears")

	// A comment typed into the form survives the list's live refresh when
	// another request arrives.
	comment := testid("approval") + `[data-id="` + id + `"] ` + testid("comment")
	b.fill(comment, "Checked the text; fine to write.")
	caller := f.userID("member@acme.test")
	other, err := f.approvals.Request(context.Background(), approvals.NewRequest{OrgID: orgID, WorkspaceID: wsID,
		Tool: "notes.notes.create_note", Arguments: json.RawMessage(`{"body":{"text":"second"}}`),
		Redacted: json.RawMessage(`{"body":{"text":"second"}}`), UserID: &caller, Via: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	b.waitAttr(testid("approvals"), "data-count", "2")
	b.waitAttr(testid("pending-badge"), "data-count", "2")
	if got := b.value(comment); got != "Checked the text; fine to write." {
		t.Fatalf("the live refresh lost the typed comment: %q", got)
	}
	if kept, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.toolgateNoReload === true`)); err != nil || !kept {
		t.Fatalf("the page reloaded (%v, %v)", kept, err)
	}
	b.shot("03-comment-typed")

	// Approve: the agent's call runs and returns the tool's result.
	b.clickAndLoad(testid("approval") + `[data-id="` + id + `"] ` + testid("approve"))
	b.wantText(testid("flash"), "Approved notes.notes.create_note.")
	var o outcome
	select {
	case o = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("call_tool did not return after the approval")
	}
	if o.err != nil || o.res.IsError {
		t.Fatalf("call_tool after approval: %+v %v", o.res, o.err)
	}
	text := resultText(o.res)
	if !strings.Contains(text, "hello from the agent") || !strings.Contains(text, `"id": "7"`) && !strings.Contains(text, `"id":"7"`) {
		t.Fatalf("call_tool result: %s", text)
	}
	if got := notes.requests(); len(got) != 1 || !strings.HasPrefix(got[0], "POST /notes ") {
		t.Fatalf("upstream requests: %v", got)
	}
	b.waitAttr(testid("pending-badge"), "data-count", "1")
	b.shot("04-approved")

	// The other request, denied through the API, leaves the page live and
	// the badge goes back to zero.
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.toolgateNoReload = true`))
	if res := f.owner.api("POST", approvalsAPI+"/"+other.ID+"/deny", map[string]any{"comment": "one is enough"}); res.status != 200 {
		t.Fatalf("deny the other: %d %s", res.status, res.body)
	}
	b.waitAttr(testid("pending-badge"), "data-count", "0")
	b.waitText(testid("empty")+" h2", "Nothing waits for a decision")
	if kept, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.toolgateNoReload === true`)); err != nil || !kept {
		t.Fatalf("the page reloaded (%v, %v)", kept, err)
	}

	// The request's page, the link sent to approvers, says who approved.
	b.open(approvalsPath + "/" + id)
	b.wantText(testid("approval-decided-by"), "approver@acme.test")
	b.wantText(testid("approval-comment"), "Checked the text; fine to write.")
	b.wantNone(testid("approve"))
	b.waitText(testid("approval-status"), "executed")
	b.shot("05-request-page")
	b.checkConsole()
	owner.checkConsole()
}

// resultText joins a tool result's text content.
func resultText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// attr reads an attribute of the first element matching sel.
func (b *tab) attr(sel, name string) string {
	b.t.Helper()
	b.do("wait for "+sel, chromedp.WaitReady(chromedp.CSS(sel)))
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector(`+jsString(sel)+`).getAttribute(`+jsString(name)+`) || ""`))
	if err != nil {
		b.fail("read "+name+" of "+sel, err)
	}
	return v
}

// waitAttr waits until an element's attribute has a value, across swaps.
func (b *tab) waitAttr(sel, name, want string) {
	b.t.Helper()
	js := `(function () { var e = document.querySelector(` + jsString(sel) + `); return e ? e.getAttribute(` + jsString(name) + `) : null })()`
	deadline := time.Now().Add(45 * time.Second)
	last := "(no such element)"
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[*string](js))
		cancel()
		if err == nil && got != nil {
			if last = *got; last == want {
				return
			}
		}
		if b.ctx.Err() != nil || time.Now().After(deadline) {
			b.t.Fatalf("%s: waited for %s=%q, have %q", sel, name, want, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
