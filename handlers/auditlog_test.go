package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const auditAPI = "/api/v1/orgs/acme/audit-events"

// auditEventResp is one event as the API answers it.
type auditEventResp struct {
	ID            int64          `json:"id"`
	Action        string         `json:"action"`
	TargetType    string         `json:"target_type"`
	TargetID      string         `json:"target_id"`
	WorkspaceID   *int64         `json:"workspace_id"`
	WorkspaceSlug *string        `json:"workspace_slug"`
	ActorEmail    *string        `json:"actor_email"`
	Details       map[string]any `json:"details"`
}

type auditPageResp struct {
	Items      []auditEventResp `json:"items"`
	NextCursor *string          `json:"next_cursor"`
}

func auditEvents(t *testing.T, c *client, query string) auditPageResp {
	t.Helper()
	res := c.api("GET", auditAPI+query, nil)
	if res.status != http.StatusOK {
		t.Fatalf("GET %s%s: %d %s", auditAPI, query, res.status, res.body)
	}
	var p auditPageResp
	res.json(t, &p)
	return p
}

// TestAuditLogRecordsChangesAndDecisions: creating and revoking an API key,
// a credential and a policy rule's changes each leave an event, with who
// did it, in the same transaction as the change; the log shows them newest
// first to owners and admins, filters and pages them, and never shows a
// secret.
func TestAuditLogRecordsChangesAndDecisions(t *testing.T) {
	f := newCredFixture(t)
	const secret = "audit-canary-5f1e2d3c4b5a"
	createCredential(t, f.admin, credWS, map[string]any{"source_id": f.wsSrc.ID, "scope": "workspace",
		"auth": map[string]any{"type": "bearer"}, "secret": map[string]any{"value": secret}}, 201)
	key := createKey(t, f.member, apiKeysWS, map[string]any{"name": "claude", "mode": "direct"})
	if res := f.owner.api("DELETE", fmt.Sprintf("%s/%d", apiKeysWS, key.ID), nil); res.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	approver := "/api/v1/orgs/acme/workspaces/default/approvers/" + strconv.FormatInt(f.userID(t, "member2@acme.test"), 10)
	if res := f.owner.api("PUT", approver, nil); res.status >= 300 {
		t.Fatalf("add approver: %d %s", res.status, res.body)
	}
	first := createPolicy(t, f.owner, orgPolicies, map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "allow"})
	rule := createPolicy(t, f.admin, orgPolicies, map[string]any{"target_type": "everyone", "selector_type": "pattern",
		"selector": "github.**", "effect": "deny", "condition": `args.token == "` + secret + `"`})
	rulePath := orgPolicies + "/" + strconv.FormatInt(rule.ID, 10)
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"POST", rulePath + "/move", map[string]any{"direction": "up"}},
		{"PATCH", rulePath, map[string]any{"enabled": false}},
		{"DELETE", orgPolicies + "/" + strconv.FormatInt(first.ID, 10), nil},
		{"PATCH", "/api/v1/orgs/acme/sources/" + f.orgSrc.ID, map[string]any{"enabled": false}},
		{"DELETE", "/api/v1/orgs/acme/workspaces/other/sources/" + f.otherSrc.ID, nil},
	} {
		if res := f.admin.api(req.method, req.path, req.body); res.status >= 300 {
			t.Fatalf("%s %s: %d %s", req.method, req.path, res.status, res.body)
		}
	}

	all := auditEvents(t, f.owner, "")
	var actions []string
	for _, e := range all.Items {
		actions = append(actions, e.Action)
	}
	want := "source.deleted,source.updated,policy.deleted,policy.updated,policy.moved,policy.created,policy.created,approver.added," +
		"api_key.revoked,api_key.created,credential.created,source.created,source.created,source.created,workspace.created"
	if got := strings.Join(actions, ","); got != want {
		t.Fatalf("events newest first:\n got %s\nwant %s", got, want)
	}
	byAction := map[string]auditEventResp{}
	for _, e := range all.Items {
		byAction[e.Action] = e
	}
	created, revoked := byAction["api_key.created"], byAction["api_key.revoked"]
	if created.ActorEmail == nil || *created.ActorEmail != "member@acme.test" || revoked.ActorEmail == nil || *revoked.ActorEmail != "owner@acme.test" ||
		created.Details["name"] != "claude" || created.Details["mode"] != "direct" || created.TargetID != strconv.FormatInt(key.ID, 10) ||
		created.WorkspaceSlug == nil || *created.WorkspaceSlug != "default" {
		t.Fatalf("key events: %+v %+v", created, revoked)
	}
	if moved := byAction["policy.moved"]; moved.WorkspaceID != nil || moved.Details["position"] != float64(1) || moved.Details["condition"] != true {
		t.Fatalf("moved rule: %+v", moved)
	}
	if d := byAction["policy.deleted"]; d.TargetID != strconv.FormatInt(first.ID, 10) || d.Details["effect"] != "allow" {
		t.Fatalf("deleted rule: %+v", d)
	}
	if u := byAction["source.updated"]; u.TargetID != f.orgSrc.ID || u.Details["enabled"] != false || u.Details["name"] != "Billing" ||
		u.WorkspaceID != nil || u.ActorEmail == nil || *u.ActorEmail != "admin@acme.test" {
		t.Fatalf("updated source: %+v", u)
	}
	if d := byAction["source.deleted"]; d.TargetID != f.otherSrc.ID || d.Details["name"] != "Elsewhere" || d.WorkspaceSlug == nil || *d.WorkspaceSlug != "other" {
		t.Fatalf("deleted source: %+v", d)
	}

	// Filters, and pages of two.
	keys := auditEvents(t, f.admin, "?category=api_key")
	if len(keys.Items) != 2 || keys.Items[0].Action != "api_key.revoked" || keys.NextCursor != nil {
		t.Fatalf("api_key category: %+v", keys)
	}
	if ws := auditEvents(t, f.owner, fmt.Sprintf("?workspace=%d", f.wsID)); len(ws.Items) != 5 {
		t.Fatalf("default workspace: %d events, want Petstore's, the credential's, the key's two and the approver's", len(ws.Items))
	}
	var paged []string
	for q := "?limit=3"; ; {
		p := auditEvents(t, f.owner, q)
		for _, e := range p.Items {
			paged = append(paged, e.Action)
		}
		if p.NextCursor == nil {
			break
		}
		q = "?limit=3&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	if strings.Join(paged, ",") != want {
		t.Fatalf("paged: %v", paged)
	}
	for query, field := range map[string]string{"?category=keys": "category", "?workspace=999999": "workspace",
		"?cursor=bm9wZQ": "cursor", "?limit=201": "limit"} {
		if res := f.owner.api("GET", auditAPI+query, nil); res.status != http.StatusUnprocessableEntity || !strings.Contains(res.body, `"`+field+`"`) {
			t.Errorf("GET %s: %d %s", query, res.status, res.body)
		}
	}

	// The console: the same events, in words, with the filters.
	page := f.admin.get("/o/acme/audit")
	if page.status != http.StatusOK {
		t.Fatalf("page: %d %s", page.status, excerpt(page.body))
	}
	for _, s := range []string{"Audit log", "Rule deleted", "Rule moved", "API key revoked", "API key claude", "Credential added", "Credential for Petstore", "Approver added", "member2@acme.test", "Source added", "Source changed", "Source deleted", "Source Elsewhere",
		`href="/o/acme/w/default/sources/` + f.wsSrc.ID + `"`,
		"owner@acme.test", "member@acme.test", "admin@acme.test", `data-testid="audit-filters"`, `href="/o/acme/policies"`} {
		if !strings.Contains(page.body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if filtered := f.owner.get("/o/acme/audit?category=policy"); strings.Contains(filtered.body, "API key revoked") || !strings.Contains(filtered.body, "Rule added") {
		t.Fatalf("policy filter: %s", excerpt(filtered.body))
	}
	if bad := f.owner.do("GET", "/o/acme/audit?category=nope", nil, "", true); bad.status != http.StatusUnprocessableEntity ||
		!strings.Contains(bad.body, "Choose one of organization, workspace, member, source, credential") || strings.Contains(bad.body, "<html") {
		t.Fatalf("bad filter: %d %s", bad.status, excerpt(bad.body))
	}
	for _, res := range []response{page, f.owner.api("GET", auditAPI, nil)} {
		if strings.Contains(res.body, secret) {
			t.Fatal("the audit log shows a secret")
		}
	}
	if nav := f.member.get("/o/acme/members"); strings.Contains(nav.body, "audit-log-nav") {
		t.Fatal("a member's sidebar links the audit log")
	}
}

// TestAuditLogByRole: owners and admins read their organization's log;
// members and viewers are refused, and another organization's owner sees
// none of it.
func TestAuditLogByRole(t *testing.T) {
	f := newFixture(t)
	createKey(t, f.member, apiKeysWS, map[string]any{"name": "acme-only-key"})
	f.run(t, each("audit log", "GET", "/o/acme/audit", nil, adminOnly(200), "acme-only-key"))
	for who, want := range map[string]int{"owner": 200, "admin": 200, "member": 403, "viewer": 403, "outsider": 404} {
		if res := f.as(who).api("GET", auditAPI, nil); res.status != want {
			t.Errorf("%s: GET %s: %d, want %d", who, auditAPI, res.status, want)
		}
	}
	if own := f.outsider.get("/o/globex/audit"); own.status != http.StatusOK || strings.Contains(own.body, "acme-only-key") ||
		!strings.Contains(own.body, "Nothing recorded yet") {
		t.Fatalf("Globex's log: %d %s", own.status, excerpt(own.body))
	}
	if res := f.outsider.api("GET", "/api/v1/orgs/globex/audit-events", nil); res.status != http.StatusOK || strings.Contains(res.body, "acme") {
		t.Fatalf("Globex's API log: %d %s", res.status, res.body)
	}
}

// TestAuditLogBrowser: an admin opens the Audit log from the sidebar,
// narrows it with the "What" select (htmx swaps the list, the URL
// follows), and clears the filter. Screenshots go to OutputDir/audit-log.
func TestAuditLogBrowser(t *testing.T) {
	f := newFixture(t)
	createKey(t, f.member, apiKeysWS, map[string]any{"name": "cursor"})
	createPolicy(t, f.owner, orgPolicies, map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "allow"})
	browserCtx, shots := startBrowser(t, 2*time.Minute, "audit-log")
	b := newTab(t, browserCtx, f.srv.URL, shots)
	b.signIn("admin@acme.test")

	b.clickAndLoad(testid("audit-log-nav"))
	b.wantPath("/o/acme/audit")
	b.waitText(testid("events"), "API key created")
	if got := b.text(testid("events")); !strings.Contains(got, "Rule added") || !strings.Contains(got, "member@acme.test") {
		t.Fatalf("events: %q", got)
	}
	b.shot("01-audit-log")

	b.pick(testid("field-category"), "api_key")
	waitSwap(t, b, "category=api_key")
	if got := b.text(testid("events") + " tbody"); !strings.Contains(got, "API key cursor") || strings.Contains(got, "Rule added") {
		t.Fatalf("filtered: %q", got)
	}
	b.shot("02-api-keys")
	b.clickAndLoad(testid("clear-filters"))
	b.wantPath("/o/acme/audit")
	b.waitText(testid("events"), "Rule added")
	b.checkConsole()
}

// TestAuditLogRecordsMembership: invitations sent, revoked and accepted,
// a role changed, a member removed and one leaving each leave an event
// naming the person; the invitation's token never shows.
func TestAuditLogRecordsMembership(t *testing.T) {
	f := newFixture(t)
	invite := func(email string) (id int64, token string) {
		res := f.owner.api("POST", "/api/v1/orgs/acme/invitations", map[string]any{"email": email, "role": "member"})
		if res.status != http.StatusCreated {
			t.Fatalf("invite %s: %d %s", email, res.status, res.body)
		}
		var inv struct {
			ID  int64  `json:"id"`
			URL string `json:"url"`
		}
		res.json(t, &inv)
		return inv.ID, inv.URL[strings.LastIndex(inv.URL, "/")+1:]
	}
	revoked, _ := invite("never@acme.test")
	if res := f.owner.api("DELETE", fmt.Sprintf("/api/v1/orgs/acme/invitations/%d", revoked), nil); res.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	_, token := invite("newcomer@acme.test")
	f.account("newcomer@acme.test", "")
	if res := f.signIn("newcomer@acme.test").api("POST", "/api/v1/invitations/accept", map[string]any{"token": token}); res.status != http.StatusOK {
		t.Fatalf("accept: %d %s", res.status, res.body)
	}
	member := strconv.FormatInt(f.userID("member@acme.test"), 10)
	if res := f.admin.api("PATCH", "/api/v1/orgs/acme/members/"+member, map[string]any{"role": "viewer"}); res.status != http.StatusOK {
		t.Fatalf("change role: %d %s", res.status, res.body)
	}
	if res := f.admin.api("DELETE", "/api/v1/orgs/acme/members/"+member, nil); res.status != http.StatusNoContent {
		t.Fatalf("remove: %d %s", res.status, res.body)
	}
	if res := f.viewer.api("DELETE", "/api/v1/orgs/acme/members/"+strconv.FormatInt(f.userID("viewer@acme.test"), 10), nil); res.status != http.StatusNoContent {
		t.Fatalf("leave: %d %s", res.status, res.body)
	}

	events := auditEvents(t, f.owner, "?category=member")
	var got []string
	for _, e := range events.Items {
		who := ""
		if e.ActorEmail != nil {
			who = *e.ActorEmail
		}
		got = append(got, e.Action+" by "+who)
	}
	want := []string{"member.left by viewer@acme.test", "member.removed by admin@acme.test", "member.role_changed by admin@acme.test",
		"member.joined by newcomer@acme.test", "member.invited by owner@acme.test", "member.invitation_revoked by owner@acme.test",
		"member.invited by owner@acme.test"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("membership events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rc := events.Items[2]; rc.Details["from"] != "member" || rc.Details["to"] != "viewer" || rc.TargetID != member {
		t.Fatalf("role change: %+v", rc)
	}
	page := f.owner.get("/o/acme/audit?category=member")
	for _, s := range []string{"Invitation to never@acme.test", "Invitation revoked", "Member joined", "newcomer@acme.test",
		"Role changed", "Member removed", "Member left", "member@acme.test"} {
		if !strings.Contains(page.body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	for _, res := range []response{page, f.owner.api("GET", auditAPI, nil)} {
		if strings.Contains(res.body, token) {
			t.Fatal("the audit log shows an invitation's token")
		}
	}
}

// TestAuditLogRecordsWorkspacesAndTheOrganization: a workspace added,
// renamed and deleted, and the organization renamed, each leave an event;
// the deleted workspace's stays readable, by name, under the organization.
func TestAuditLogRecordsWorkspacesAndTheOrganization(t *testing.T) {
	f := newFixture(t)
	res := f.admin.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Staging", "slug": "staging"})
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	var ws struct {
		ID int64 `json:"id"`
	}
	res.json(t, &ws)
	if res := f.admin.api("PATCH", "/api/v1/orgs/acme/workspaces/staging", map[string]any{"name": "Pre-production"}); res.status != http.StatusOK {
		t.Fatalf("rename: %d %s", res.status, res.body)
	}
	if own := auditEvents(t, f.owner, fmt.Sprintf("?workspace=%d", ws.ID)); len(own.Items) != 2 {
		t.Fatalf("the workspace's own events: %+v", own.Items)
	}
	if res := f.owner.api("DELETE", "/api/v1/orgs/acme/workspaces/staging", nil); res.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}
	if res := f.owner.api("PATCH", "/api/v1/orgs/acme", map[string]any{"name": "Acme Robotics"}); res.status != http.StatusOK {
		t.Fatalf("rename organization: %d %s", res.status, res.body)
	}
	var got []string
	for _, e := range append(auditEvents(t, f.owner, "?category=organization").Items, auditEvents(t, f.owner, "?category=workspace").Items...) {
		got = append(got, fmt.Sprintf("%s %v %v", e.Action, e.Details["name"], e.WorkspaceID != nil))
	}
	// Deleting the workspace moved its events to the organization.
	want := "organization.updated Acme Robotics false,workspace.deleted Pre-production false,workspace.updated Pre-production false,workspace.created Staging false"
	if strings.Join(got, ",") != want {
		t.Fatalf("events:\n got %s\nwant %s", strings.Join(got, ","), want)
	}
	page := f.owner.get("/o/acme/audit")
	for _, s := range []string{"Organization renamed", "Organization Acme Robotics", "Workspace deleted", "Workspace Pre-production", "Workspace added"} {
		if !strings.Contains(page.body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}
