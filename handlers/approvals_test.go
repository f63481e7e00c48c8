package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/approvals"
)

// approvalFixture is Acme's fixture plus an approver (a member given the
// default workspace's approver role) and a plain member, and one helper
// that holds calls directly through the approvals service.
type approvalFixture struct {
	*fixture
	approver, plain *client
	orgID, wsID     int64
}

func newApprovalFixture(t *testing.T) *approvalFixture {
	f := newFixture(t)
	for _, email := range []string{"approver@acme.test", "plain@acme.test"} {
		f.join(f.account(email, ""), "acme", "member")
	}
	af := &approvalFixture{fixture: f, approver: f.signIn("approver@acme.test"), plain: f.signIn("plain@acme.test")}
	af.orgID, af.wsID = f.tenantIDs("acme", "default")
	res := f.owner.api("PUT", "/api/v1/orgs/acme/workspaces/default/approvers/"+strconv.FormatInt(f.userID("approver@acme.test"), 10), nil)
	if res.status != http.StatusOK {
		t.Fatalf("make approver: %d %s", res.status, res.body)
	}
	return af
}

// secretValue is an argument value that must never show on a page or in the API.
const secretValue = "sk-live-approval-secret"

// hold creates a pending request in Acme's default workspace, made by the
// member (member@acme.test) through an agent.
func (f *approvalFixture) hold(t *testing.T, tool string, selfApproval bool) approvals.Approval {
	t.Helper()
	return f.holdFor(t, "member@acme.test", tool, selfApproval)
}

// holdFor creates a pending request made by the given user.
func (f *approvalFixture) holdFor(t *testing.T, email, tool string, selfApproval bool) approvals.Approval {
	t.Helper()
	caller := f.userID(email)
	a, err := f.approvals.Request(context.Background(), approvals.NewRequest{
		OrgID: f.orgID, WorkspaceID: f.wsID, Tool: tool, SourceID: "src_demo",
		Arguments: json.RawMessage(`{"text":"ship it","api_key":"` + secretValue + `"}`),
		Redacted:  json.RawMessage(`{"text":"ship it","api_key":"[redacted]"}`),
		UserID:    &caller, Via: "mcp", Reason: "deploys need a person",
		AllowSelfApproval: selfApproval,
	})
	if err != nil {
		t.Fatalf("hold %s: %v", tool, err)
	}
	return a
}

const approvalsPath = "/o/acme/w/default/approvals"
const approvalsAPI = "/api/v1/orgs/acme/workspaces/default/approvals"

// approvalBody is the API's approval, as much as the tests read.
type approvalBody struct {
	ID             string          `json:"id"`
	Tool           string          `json:"tool"`
	Status         string          `json:"status"`
	Arguments      json.RawMessage `json:"arguments"`
	DecidedByEmail *string         `json:"decided_by_email"`
	Comment        string          `json:"comment"`
	UserEmail      *string         `json:"user_email"`
	URL            string          `json:"url"`
}

type apiErrorBody struct {
	Error struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Fields  map[string]string `json:"fields"`
	} `json:"error"`
}

func TestApprovalsListAndDetail(t *testing.T) {
	f := newApprovalFixture(t)
	empty := f.owner.get(approvalsPath)
	if empty.status != 200 || !strings.Contains(empty.body, "Nothing waits for a decision") {
		t.Fatalf("empty list: %d %s", empty.status, excerpt(empty.body))
	}
	a := f.hold(t, "deploy.run", false)

	// Every member of the organization sees the request with its details
	// and the redacted arguments, never the secret.
	for _, who := range []string{"owner", "admin", "member", "viewer"} {
		res := f.as(who).get(approvalsPath)
		if res.status != 200 {
			t.Fatalf("list as %s: %d", who, res.status)
		}
		for _, want := range []string{a.ID, "deploy.run", "&#34;[redacted]&#34;", "deploys need a person", "Tool default",
			"member@acme.test", `data-testid="pending-badge" data-count="1"`, `/o/acme/w/default/tools/deploy.run`} {
			if !strings.Contains(res.body, want) {
				t.Errorf("list as %s lacks %q", who, want)
			}
		}
		if strings.Contains(res.body, secretValue) {
			t.Fatalf("list as %s shows the secret argument", who)
		}
	}
	// Who may decide sees the buttons; who may not sees why.
	mayDecide := map[string]string{
		"owner": "", "admin": "",
		"viewer": "Viewers cannot decide approval requests.",
		"member": "You made this request; its rule does not allow self-approval.",
	}
	for who, why := range mayDecide {
		res := f.as(who).get(approvalsPath)
		hasButton := strings.Contains(res.body, `data-testid="approve"`)
		if why == "" && !hasButton {
			t.Errorf("%s sees no Approve button", who)
		}
		if why != "" && (hasButton || !strings.Contains(res.body, why)) {
			t.Errorf("%s: button %v, want the reason %q", who, hasButton, why)
		}
	}
	if res := f.approver.get(approvalsPath); !strings.Contains(res.body, `data-testid="approve"`) {
		t.Error("the approver sees no Approve button")
	}
	if res := f.plain.get(approvalsPath); !strings.Contains(res.body, "this workspace&#39;s approvers decide") {
		t.Errorf("a plain member is not told why: %s", excerpt(res.body))
	}

	// The htmx fragment is the list region only.
	frag := f.owner.do("GET", approvalsPath, nil, "", true)
	if frag.status != 200 || strings.Contains(frag.body, "<html") || !strings.Contains(frag.body, `id="approvals-body"`) {
		t.Fatalf("fragment: %d %s", frag.status, excerpt(frag.body))
	}
	// Tabs filter by status; an unknown one is refused.
	if res := f.owner.get(approvalsPath + "?status=approved"); !strings.Contains(res.body, "No approved requests") || strings.Contains(res.body, a.ID+`"`) {
		t.Errorf("approved tab: %s", excerpt(res.body))
	}
	if res := f.owner.get(approvalsPath + "?status=all"); !strings.Contains(res.body, a.ID) {
		t.Error("the All tab lacks the request")
	}
	if res := f.owner.get(approvalsPath + "?status=bogus"); res.status != 400 || !strings.Contains(res.body, "choose one of the tabs") {
		t.Errorf("unknown status: %d", res.status)
	}

	// The detail page is the link sent to approvers; signed out, it asks to
	// sign in and comes back.
	detail := f.owner.get(approvalsPath + "/" + a.ID)
	if detail.status != 200 || !strings.Contains(detail.body, `data-testid="approval-detail"`) || strings.Contains(detail.body, secretValue) {
		t.Fatalf("detail: %d %s", detail.status, excerpt(detail.body))
	}
	anon := f.anon.get(approvalsPath + "/" + a.ID)
	if anon.status != http.StatusSeeOther || anon.header.Get("Location") != "/signin?next="+url.QueryEscape(approvalsPath+"/"+a.ID) {
		t.Fatalf("anonymous detail: %d %s", anon.status, anon.header.Get("Location"))
	}

	// The API: list, filter, limit, detail.
	var page struct {
		Data []approvalBody `json:"data"`
	}
	res := f.viewer.api("GET", approvalsAPI+"?status=pending", nil)
	res.json(t, &page)
	if res.status != 200 || len(page.Data) != 1 || page.Data[0].ID != a.ID || page.Data[0].Status != "pending" ||
		!strings.HasSuffix(page.Data[0].URL, approvalsPath+"/"+a.ID) || page.Data[0].UserEmail == nil || *page.Data[0].UserEmail != "member@acme.test" {
		t.Fatalf("API list: %d %s", res.status, res.body)
	}
	if strings.Contains(res.body, secretValue) || !strings.Contains(string(page.Data[0].Arguments), `"[redacted]"`) {
		t.Fatalf("API arguments: %s", page.Data[0].Arguments)
	}
	for q, field := range map[string]string{"?status=bogus": "status", "?limit=0": "limit", "?limit=201": "limit", "?limit=x": "limit"} {
		res := f.owner.api("GET", approvalsAPI+q, nil)
		var body apiErrorBody
		res.json(t, &body)
		if res.status != 422 || body.Error.Fields[field] == "" {
			t.Errorf("GET %s: %d %s", q, res.status, res.body)
		}
	}
	res = f.owner.api("GET", approvalsAPI+"?status=denied&limit=200", nil)
	res.json(t, &page)
	if res.status != 200 || len(page.Data) != 0 {
		t.Errorf("denied: %d %s", res.status, res.body)
	}
	var one approvalBody
	res = f.owner.api("GET", approvalsAPI+"/"+a.ID, nil)
	res.json(t, &one)
	if res.status != 200 || one.ID != a.ID || one.Tool != "deploy.run" {
		t.Fatalf("API detail: %d %s", res.status, res.body)
	}

	// The badge counts what waits.
	badge := f.viewer.get(approvalsPath + "/badge")
	if badge.status != 200 || !strings.Contains(badge.body, `data-count="1"`) || strings.Contains(badge.body, "<html") {
		t.Fatalf("badge: %d %s", badge.status, badge.body)
	}
}

func TestApprovalDecisions(t *testing.T) {
	f := newApprovalFixture(t)
	byOwner := f.hold(t, "deploy.owner", false)
	byAdmin := f.hold(t, "deploy.admin", false)
	byApprover := f.hold(t, "deploy.approver", false)
	adminApproves := f.hold(t, "deploy.admin-approves", false)
	refused := f.hold(t, "deploy.refused", false)
	self := f.holdFor(t, "approver@acme.test", "deploy.self", true)
	notSelf := f.holdFor(t, "approver@acme.test", "deploy.not-self", false)

	// Viewers are refused at the door, on the console and in the API.
	if res := f.viewer.post(approvalsPath+"/"+refused.ID+"/approve", nil, false); res.status != 403 {
		t.Errorf("viewer console approve: %d", res.status)
	}
	if res := f.viewer.api("POST", approvalsAPI+"/"+refused.ID+"/deny", nil); res.status != 403 {
		t.Errorf("viewer API deny: %d", res.status)
	}
	// A member who is not an approver, and the caller itself, are refused
	// by the service with the reason.
	res := f.plain.post(approvalsPath+"/"+refused.ID+"/approve", nil, false)
	if res.status != 403 || !strings.Contains(res.body, "approvers decide its requests") {
		t.Errorf("plain member console approve: %d %s", res.status, excerpt(res.body))
	}
	res = f.plain.api("POST", approvalsAPI+"/"+refused.ID+"/approve", map[string]any{})
	var eb apiErrorBody
	res.json(t, &eb)
	if res.status != 403 || eb.Error.Code != "forbidden" {
		t.Errorf("plain member API approve: %d %s", res.status, res.body)
	}
	res = f.member.post(approvalsPath+"/"+refused.ID+"/approve", nil, true)
	if res.status != 403 || !strings.Contains(res.body, "You made this request") || res.header.Get("HX-Retarget") != "#alerts" {
		t.Errorf("caller's own approve (htmx): %d %s", res.status, res.body)
	}
	// An approver's own request: refused unless the rule allows
	// self-approval.
	if res := f.approver.api("POST", approvalsAPI+"/"+notSelf.ID+"/approve", nil); res.status != 403 || !strings.Contains(res.body, "You made this request") {
		t.Errorf("approver's own request: %d %s", res.status, res.body)
	}
	res = f.approver.api("POST", approvalsAPI+"/"+self.ID+"/approve", map[string]any{"comment": "my own, allowed"})
	var got approvalBody
	res.json(t, &got)
	if res.status != 200 || got.Status != "approved" || got.DecidedByEmail == nil || *got.DecidedByEmail != "approver@acme.test" {
		t.Errorf("self-approval: %d %s", res.status, res.body)
	}

	// The owner approves on the console, with a comment, and returns to
	// the page the form came from with a flash.
	res = f.owner.post(approvalsPath+"/"+byOwner.ID+"/approve", url.Values{"comment": {"looks right"}, "back": {approvalsPath + "/" + byOwner.ID}}, false)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != approvalsPath+"/"+byOwner.ID {
		t.Fatalf("owner approve: %d %s", res.status, res.header.Get("Location"))
	}
	page := f.owner.get(approvalsPath + "/" + byOwner.ID)
	for _, want := range []string{"Approved deploy.owner", `data-testid="approval-decided-by">owner@acme.test`, "looks right", `data-status="approved"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("after approving, the page lacks %q", want)
		}
	}
	if strings.Contains(page.body, `data-testid="approve"`) {
		t.Error("a decided request still offers Approve")
	}
	// A back link to another site is not followed.
	res = f.admin.post(approvalsPath+"/"+byAdmin.ID+"/deny", url.Values{"back": {"https://evil.test/x"}}, true)
	if res.status != 200 || res.header.Get("HX-Redirect") != "/x" {
		t.Errorf("admin deny (htmx): %d %q", res.status, res.header.Get("HX-Redirect"))
	}
	// A second decision is a conflict that says what happened.
	res = f.admin.post(approvalsPath+"/"+byOwner.ID+"/deny", nil, false)
	if res.status != 409 || !strings.Contains(res.body, "already approved by owner@acme.test") {
		t.Errorf("second decision (console): %d %s", res.status, excerpt(res.body))
	}
	res = f.owner.api("POST", approvalsAPI+"/"+byAdmin.ID+"/approve", nil)
	eb = apiErrorBody{}
	res.json(t, &eb)
	if res.status != 409 || eb.Error.Code != "not_pending" || !strings.Contains(eb.Error.Message, "already denied by admin@acme.test") {
		t.Errorf("second decision (API): %d %s", res.status, res.body)
	}
	// The admin approves through the API too.
	res = f.admin.api("POST", approvalsAPI+"/"+adminApproves.ID+"/approve", map[string]any{})
	got = approvalBody{}
	res.json(t, &got)
	if res.status != 200 || got.Status != "approved" || got.DecidedByEmail == nil || *got.DecidedByEmail != "admin@acme.test" {
		t.Errorf("admin approve: %d %s", res.status, res.body)
	}
	// The approver decides through the API.
	res = f.approver.api("POST", approvalsAPI+"/"+byApprover.ID+"/approve", map[string]any{"comment": "ok from the approver"})
	got = approvalBody{}
	res.json(t, &got)
	if res.status != 200 || got.Status != "approved" || got.Comment != "ok from the approver" {
		t.Errorf("approver approve: %d %s", res.status, res.body)
	}
	// A comment over the limit names the field and decides nothing.
	res = f.owner.api("POST", approvalsAPI+"/"+refused.ID+"/deny", map[string]any{"comment": strings.Repeat("x", 1001)})
	eb = apiErrorBody{}
	res.json(t, &eb)
	if res.status != 422 || eb.Error.Fields["comment"] == "" {
		t.Errorf("long comment: %d %s", res.status, res.body)
	}
	if res := f.owner.api("POST", approvalsAPI+"/"+refused.ID+"/deny", map[string]any{"reason": "typo"}); res.status != 400 {
		t.Errorf("unknown field: %d %s", res.status, res.body)
	}

	// Each decision left an audit event naming the tool and the comment,
	// never the arguments.
	events, err := f.store.AuditEvents(context.Background(), f.orgID, 50)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, e := range events {
		if e.TargetType == "approval" {
			actions[e.TargetID] = e.Action
			if strings.Contains(string(e.Details), secretValue) || strings.Contains(string(e.Details), "ship it") {
				t.Errorf("audit event %s holds arguments: %s", e.Action, e.Details)
			}
			if e.TargetID == byOwner.ID && !strings.Contains(string(e.Details), "looks right") {
				t.Errorf("audit event lacks the comment: %s", e.Details)
			}
		}
	}
	want := map[string]string{byOwner.ID: "approval.approved", byAdmin.ID: "approval.denied",
		byApprover.ID: "approval.approved", self.ID: "approval.approved", adminApproves.ID: "approval.approved"}
	for id, action := range want {
		if actions[id] != action {
			t.Errorf("audit of %s: %q, want %q", id, actions[id], action)
		}
	}
	if _, ok := actions[refused.ID]; ok {
		t.Errorf("a refused decision was audited as %s", actions[refused.ID])
	}
	if res := f.owner.get(approvalsPath + "/badge"); !strings.Contains(res.body, `data-count="2"`) {
		t.Errorf("badge after decisions: %s", res.body)
	}
}

// TestApprovalsTenantIsolation: another organization's request ids are 404
// everywhere, even to that organization's owner through their own workspace.
func TestApprovalsTenantIsolation(t *testing.T) {
	f := newApprovalFixture(t)
	a := f.hold(t, "deploy.run", false)
	paths := []struct{ method, path string }{
		{"GET", "/o/globex/w/default/approvals/" + a.ID},
		{"POST", "/o/globex/w/default/approvals/" + a.ID + "/approve"},
		{"GET", "/api/v1/orgs/globex/workspaces/default/approvals/" + a.ID},
		{"POST", "/api/v1/orgs/globex/workspaces/default/approvals/" + a.ID + "/approve"},
		{"GET", approvalsPath + "/" + a.ID},
		{"POST", approvalsAPI + "/" + a.ID + "/deny"},
		{"GET", "/o/acme/w/default/approvals/apr_nothing"},
	}
	for _, p := range paths {
		var res response
		switch {
		case p.method == "POST" && strings.HasPrefix(p.path, "/api/"):
			res = f.outsider.api("POST", p.path, nil)
		case p.method == "POST":
			res = f.outsider.post(p.path, nil, false)
		default:
			res = f.outsider.get(p.path)
		}
		if p.path == "/o/acme/w/default/approvals/apr_nothing" {
			res = f.owner.get(p.path)
		}
		if res.status != 404 {
			t.Errorf("%s %s: %d, want 404", p.method, p.path, res.status)
		}
	}
	// A second workspace of the same organization does not see it either.
	if res := f.owner.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Other"}); res.status != 201 {
		t.Fatalf("second workspace: %d %s", res.status, res.body)
	}
	if res := f.owner.get("/o/acme/w/other/approvals/" + a.ID); res.status != 404 {
		t.Errorf("other workspace detail: %d", res.status)
	}
	if res := f.owner.api("POST", "/api/v1/orgs/acme/workspaces/other/approvals/"+a.ID+"/approve", nil); res.status != 404 {
		t.Errorf("other workspace approve: %d", res.status)
	}
	if got, _ := f.approvals.Get(context.Background(), f.orgID, f.wsID, a.ID); got.Status != approvals.Pending {
		t.Fatalf("the request changed: %s", got.Status)
	}
}

// sseStream reads a server-sent event stream line by line.
type sseStream struct {
	res   *http.Response
	lines chan string
}

func (c *client) stream(t *testing.T, path string, lastEventID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", c.e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	// No client timeout: the stream is meant to stay open.
	hc := &http.Client{Jar: c.http.Jar}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &sseStream{res: res, lines: make(chan string, 100)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	return s
}

// next returns the data of the next "approval" event, failing after a
// generous bound (a hang is a bug, not slowness).
func (s *sseStream) next(t *testing.T) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	event := ""
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			switch {
			case line == "event: approval":
				event = "approval"
			case strings.HasPrefix(line, "data: ") && event == "approval":
				return strings.TrimPrefix(line, "data: ")
			case line == "":
				event = ""
			}
		case <-timeout:
			t.Fatal("no approval event")
		}
	}
}

// TestApprovalEventsStream: the console's stream carries changes made by
// another replica (a second approvals service over the same database), a
// reconnect is told to re-read, and shutdown ends open streams.
func TestApprovalEventsStream(t *testing.T) {
	f := newApprovalFixture(t)
	replica := approvals.New(approvals.Options{Store: f.store, Ring: f.keys, Logger: testLogger(t)})
	t.Cleanup(replica.Close)

	s := f.viewer.stream(t, approvalsPath+"/events", "")
	caller := f.userID("member@acme.test")
	a, err := replica.Request(context.Background(), approvals.NewRequest{OrgID: f.orgID, WorkspaceID: f.wsID,
		Tool: "deploy.run", Arguments: json.RawMessage(`{}`), UserID: &caller, Via: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.next(t); got != a.ID {
		t.Fatalf("event for the request: %q, want %q", got, a.ID)
	}
	if res := f.viewer.get(approvalsPath + "/badge"); !strings.Contains(res.body, `data-count="1"`) {
		t.Fatalf("badge after the request: %s", res.body)
	}
	owner := f.userID("owner@acme.test")
	if _, err := replica.Decide(context.Background(), f.orgID, f.wsID, a.ID, approvals.Decider{UserID: owner, Role: "owner"}, true, ""); err != nil {
		t.Fatal(err)
	}
	if got := s.next(t); got != a.ID {
		t.Fatalf("event for the decision: %q", got)
	}
	if res := f.viewer.get(approvalsPath + "/badge"); !strings.Contains(res.body, `data-count="0"`) {
		t.Fatalf("badge after the decision: %s", res.body)
	}
	// Another organization's stream hears nothing of Acme's: its first
	// event is its own request.
	other := f.outsider.stream(t, "/o/globex/w/default/approvals/events", "")
	gOrg, gWS := f.tenantIDs("globex", "default")
	if _, err := f.approvals.Request(context.Background(), approvals.NewRequest{OrgID: f.orgID, WorkspaceID: f.wsID,
		Tool: "acme.only", Via: "mcp"}); err != nil {
		t.Fatal(err)
	}
	g, err := f.approvals.Request(context.Background(), approvals.NewRequest{OrgID: gOrg, WorkspaceID: gWS, Tool: "globex.only", Via: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if got := other.next(t); got != g.ID {
		t.Fatalf("globex's stream got %q, want its own %q", got, g.ID)
	}
	// Outsiders cannot listen to Acme.
	if res := f.outsider.get(approvalsPath + "/events"); res.status != 404 {
		t.Fatalf("outsider stream: %d", res.status)
	}

	// A reconnect (Last-Event-ID) gets an event at once.
	again := f.viewer.stream(t, approvalsPath+"/events", "7")
	if got := again.next(t); got != "resync" {
		t.Fatalf("reconnect: %q", got)
	}

	// Shutdown ends the open streams instead of waiting for them.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := f.srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with open streams: %v", err)
	}
	for range s.lines {
	}
	for range other.lines {
	}
}

func TestApprovers(t *testing.T) {
	f := newApprovalFixture(t)
	const settings = "/o/acme/w/default/settings"
	const approversAPI = "/api/v1/orgs/acme/workspaces/default/approvers"
	id := func(email string) string { return strconv.FormatInt(f.userID(email), 10) }

	page := f.owner.get(settings)
	for _, want := range []string{`data-testid="approvers"`, "approver@acme.test", `value="` + id("plain@acme.test") + `"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("settings lack %q", want)
		}
	}
	if strings.Contains(page.body, `<option value="`+id("viewer@acme.test")+`"`) || strings.Contains(page.body, `<option value="`+id("admin@acme.test")+`"`) {
		t.Error("the approver choice offers a viewer or an admin")
	}
	if res := f.member.get(settings); strings.Contains(res.body, `data-testid="approvers"`) {
		t.Error("a member sees the approvers section")
	}

	// Refusals name the field and keep the choice.
	refusals := map[string]string{
		id("viewer@acme.test"):     "viewers cannot decide approvals",
		id("admin@acme.test"):      "already decides every approval request",
		id("outsider@globex.test"): "not a member of the organization",
		"nobody":                   "Choose a member",
	}
	for user, want := range refusals {
		res := f.owner.post("/o/acme/w/default/approvers", url.Values{"user_id": {user}}, true)
		if res.status != 422 || !strings.Contains(res.body, want) || strings.Contains(res.body, "<html") {
			t.Errorf("add %s (htmx): %d %s", user, res.status, excerpt(res.body))
		}
		res = f.owner.api("PUT", approversAPI+"/"+user, nil)
		var eb apiErrorBody
		res.json(t, &eb)
		if user != "nobody" && (res.status != 422 || !strings.Contains(eb.Error.Fields["user_id"], want)) {
			t.Errorf("PUT %s: %d %s", user, res.status, res.body)
		}
	}
	res := f.owner.post("/o/acme/w/default/approvers", url.Values{"user_id": {id("viewer@acme.test")}}, false)
	if res.status != 422 || !strings.Contains(res.body, "Workspace settings") || !strings.Contains(res.body, "viewers cannot decide") {
		t.Errorf("add a viewer (no htmx): %d", res.status)
	}

	// Add on the console, then the member may decide.
	a := f.hold(t, "deploy.run", false)
	if res := f.plain.api("POST", approvalsAPI+"/"+a.ID+"/approve", nil); res.status != 403 {
		t.Fatalf("plain member before: %d", res.status)
	}
	res = f.admin.post("/o/acme/w/default/approvers", url.Values{"user_id": {id("plain@acme.test")}}, false)
	if res.status != http.StatusSeeOther {
		t.Fatalf("add approver: %d %s", res.status, excerpt(res.body))
	}
	var list struct {
		Data []struct {
			UserID  int64   `json:"user_id"`
			Email   string  `json:"email"`
			Role    string  `json:"role"`
			AddedBy *string `json:"added_by"`
		} `json:"data"`
	}
	res = f.owner.api("GET", approversAPI, nil)
	res.json(t, &list)
	if res.status != 200 || len(list.Data) != 2 || list.Data[1].Email != "plain@acme.test" || list.Data[1].AddedBy == nil || *list.Data[1].AddedBy != "admin@acme.test" {
		t.Fatalf("approvers: %d %s", res.status, res.body)
	}
	// Adding again changes nothing.
	if res := f.owner.api("PUT", approversAPI+"/"+id("plain@acme.test"), nil); res.status != 200 || strings.Count(res.body, "plain@acme.test") != 1 {
		t.Errorf("add again: %d %s", res.status, res.body)
	}
	if res := f.plain.api("POST", approvalsAPI+"/"+a.ID+"/approve", nil); res.status != 200 {
		t.Fatalf("new approver approves: %d %s", res.status, res.body)
	}

	// Remove on the console and in the API; an approver demoted to viewer
	// stays listed but may not decide.
	res = f.owner.post("/o/acme/w/default/approvers/"+id("plain@acme.test")+"/remove", nil, false)
	if res.status != http.StatusSeeOther {
		t.Fatalf("remove: %d", res.status)
	}
	if res := f.owner.api("DELETE", approversAPI+"/"+id("plain@acme.test"), nil); res.status != 404 {
		t.Errorf("remove again: %d", res.status)
	}
	if res := f.owner.api("PATCH", "/api/v1/orgs/acme/members/"+id("approver@acme.test"), map[string]any{"role": "viewer"}); res.status != 200 {
		t.Fatalf("demote: %d %s", res.status, res.body)
	}
	b := f.hold(t, "deploy.again", false)
	if res := f.approver.api("POST", approvalsAPI+"/"+b.ID+"/approve", nil); res.status != 403 {
		t.Errorf("demoted approver: %d", res.status)
	}
	if res := f.owner.get(settings); !strings.Contains(res.body, "cannot decide while a viewer") {
		t.Error("the demoted approver is not marked")
	}
	if res := f.owner.api("DELETE", approversAPI+"/"+id("approver@acme.test"), nil); res.status != 204 {
		t.Errorf("API remove: %d %s", res.status, res.body)
	}
	res = f.owner.api("GET", approversAPI, nil)
	list.Data = nil
	res.json(t, &list)
	if len(list.Data) != 0 {
		t.Errorf("approvers after removal: %s", res.body)
	}

	// Leaving the organization ends the role: invited back later, the
	// person is not an approver again.
	if res := f.owner.api("PUT", approversAPI+"/"+id("plain@acme.test"), nil); res.status != 200 {
		t.Fatalf("add plain again: %d %s", res.status, res.body)
	}
	if res := f.owner.api("DELETE", "/api/v1/orgs/acme/members/"+id("plain@acme.test"), nil); res.status != 204 {
		t.Fatalf("remove plain from the organization: %d %s", res.status, res.body)
	}
	var left int
	if err := f.store.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM workspace_approvers WHERE user_id = $1`, f.userID("plain@acme.test")).Scan(&left); err != nil || left != 0 {
		t.Fatalf("approver rows after leaving: %d %v", left, err)
	}

	// Only owners and admins manage approvers.
	for _, who := range []string{"member", "viewer"} {
		if res := f.as(who).api("GET", approversAPI, nil); res.status != 403 {
			t.Errorf("%s lists approvers: %d", who, res.status)
		}
		if res := f.as(who).post("/o/acme/w/default/approvers", url.Values{"user_id": {id("plain@acme.test")}}, false); res.status != 403 {
			t.Errorf("%s adds an approver: %d", who, res.status)
		}
	}
	if res := f.outsider.api("PUT", approversAPI+"/"+id("plain@acme.test"), nil); res.status != 404 {
		t.Errorf("outsider adds an approver: %d", res.status)
	}

	// Every change is in the audit log.
	events, err := f.store.AuditEvents(context.Background(), f.orgID, 50)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range events {
		counts[e.Action]++
	}
	if counts["approver.added"] != 3 || counts["approver.removed"] != 2 {
		t.Errorf("audit: %v", counts)
	}
}
