package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/db"
)

const (
	orgPolicies = "/api/v1/orgs/acme/policies"
	wsPolicies  = "/api/v1/orgs/acme/workspaces/default/policies"
)

// policyResp is a rule in the API.
type policyResp struct {
	ID                 int64
	Level              string
	Position           int
	TargetType         string  `json:"target_type"`
	TargetRole         *string `json:"target_role"`
	TargetUserID       *int64  `json:"target_user_id"`
	TargetKeyID        *int64  `json:"target_key_id"`
	SelectorType       string  `json:"selector_type"`
	Selector           string
	Condition          string
	Effect             string
	Enabled            bool
	Note               string
	ApprovalTTLMinutes int  `json:"approval_ttl_minutes"`
	AllowSelfApproval  bool `json:"allow_self_approval"`
}

// apiErrorResp is an API error.
type apiErrorResp struct {
	Error struct {
		Code    string
		Message string
		Fields  map[string]string
	}
}

// simulationResp is a simulated decision in the API.
type simulationResp struct {
	Effect string
	Level  string
	Rule   *policyResp
	Reason string
	Steps  []struct {
		RuleID  int64 `json:"rule_id"`
		Level   string
		Matched bool
		Why     string
	}
	Tool struct {
		Path             string
		Method           string
		DefaultApproval  string `json:"default_approval"`
		ApprovalOverride string `json:"approval_override"`
	}
	Caller struct {
		UserID int64 `json:"user_id"`
		Role   string
		KeyID  int64 `json:"key_id"`
	}
	ApprovalTTLMinutes int  `json:"approval_ttl_minutes"`
	AllowSelfApproval  bool `json:"allow_self_approval"`
}

// createPolicy creates a rule through the API and checks the answer's status.
func createPolicy(t *testing.T, c *client, path string, body map[string]any) policyResp {
	t.Helper()
	res := c.api("POST", path, body)
	if res.status != http.StatusCreated {
		t.Fatalf("POST %s %v: %d %s", path, body, res.status, res.body)
	}
	var p policyResp
	res.json(t, &p)
	return p
}

// invalid sends body and expects a 422 whose field message contains want.
func invalid(t *testing.T, c *client, method, path string, body any, field, want string) apiErrorResp {
	t.Helper()
	res := c.api(method, path, body)
	var e apiErrorResp
	if res.status != http.StatusUnprocessableEntity {
		t.Fatalf("%s %s %v: %d, want 422: %s", method, path, body, res.status, res.body)
	}
	res.json(t, &e)
	if !strings.Contains(e.Error.Fields[field], want) {
		t.Fatalf("%s %s %v: fields %v, want %s containing %q", method, path, body, e.Error.Fields, field, want)
	}
	return e
}

// listPolicies lists a level's rules as "id:position" pairs, in order.
func listPolicies(t *testing.T, c *client, path string) []policyResp {
	t.Helper()
	res := c.api("GET", path, nil)
	if res.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.status, res.body)
	}
	var out struct{ Data []policyResp }
	res.json(t, &out)
	return out.Data
}

func ids(ps []policyResp) []int64 {
	out := []int64{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

// versions reads Acme's and its default workspace's policy versions.
func versions(t *testing.T, e *env) (int64, int64) {
	t.Helper()
	orgID, wsID := e.tenantIDs("acme", "default")
	o, w, err := e.store.PolicyVersions(context.Background(), orgID, wsID)
	if err != nil {
		t.Fatal(err)
	}
	return o, w
}

// paymentsSpec is a small OpenAPI document: a write (POST, approval
// required by default) and a read (GET, auto).
const paymentsSpec = `{"openapi": "3.0.3", "info": {"title": "Payments", "version": "1"},
	"servers": [{"url": "http://127.0.0.1:9"}],
	"paths": {"/charges": {
		"post": {"operationId": "createCharge", "summary": "Create a charge",
			"requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"amount": {"type": "integer"}}}}}},
			"responses": {"200": {"description": "ok"}}},
		"get": {"operationId": "listCharges", "summary": "List charges", "responses": {"200": {"description": "ok"}}}}}}`

// paymentsSource creates the Payments source in Acme's default workspace
// and returns it with the paths of its write and read tools.
func paymentsSource(t *testing.T, c *client) (src sourceResp, write, read string) {
	t.Helper()
	src = createSource(t, c, wsSources, map[string]any{"name": "Payments", "type": "openapi",
		"config": map[string]any{"spec": json.RawMessage(paymentsSpec)}}, http.StatusCreated)
	if src.State != "ready" || src.ToolCount != 2 {
		t.Fatalf("payments: %+v", src)
	}
	var tools struct {
		Data []struct {
			Path            string
			DefaultApproval string `json:"default_approval"`
		}
	}
	c.api("GET", wsSources+"/"+src.ID+"/tools", nil).json(t, &tools)
	for _, tl := range tools.Data {
		if tl.DefaultApproval == "required" {
			write = tl.Path
		} else {
			read = tl.Path
		}
	}
	if write == "" || read == "" {
		t.Fatalf("payments tools: %+v", tools.Data)
	}
	return src, write, read
}

// TestPoliciesAPI creates, validates, changes, orders and deletes rules
// through the API; every write bumps its level's policy version and
// notifies the other replicas.
func TestPoliciesAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	memberID := f.userID("member@acme.test")

	// Other replicas learn of every write by NOTIFY.
	conn, err := f.store.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+db.PolicyChannel); err != nil {
		t.Fatal(err)
	}
	orgID, _ := f.tenantIDs("acme", "default")
	notified := func(what string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		if err != nil || n.Payload != strconv.FormatInt(orgID, 10) {
			t.Fatalf("%s: notification %+v %v", what, n, err)
		}
	}

	org0, ws0 := versions(t, f.env)
	a := createPolicy(t, f.owner, orgPolicies, map[string]any{"target_type": "role", "target_role": "member",
		"selector_type": "pattern", "selector": "payments.**", "condition": "args.amount > 1000", "effect": "require_approval",
		"approval_ttl_minutes": 30, "allow_self_approval": true, "note": "  Large charges.  "})
	notified("create")
	if a.Level != "organization" || a.Position != 1 || a.TargetRole == nil || *a.TargetRole != "member" || a.TargetUserID != nil ||
		a.ApprovalTTLMinutes != 30 || !a.AllowSelfApproval || !a.Enabled || a.Note != "Large charges." || a.Condition != "args.amount > 1000" {
		t.Fatalf("created %+v", a)
	}
	if o, w := versions(t, f.env); o != org0+1 || w != ws0 {
		t.Fatalf("after an org rule: versions %d/%d, were %d/%d", o, w, org0, ws0)
	}
	// The expiry of a rule that holds nothing is not checked; it keeps the default.
	b := createPolicy(t, f.admin, orgPolicies, map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "deny",
		"approval_ttl_minutes": 99999})
	notified("create")
	w1 := createPolicy(t, f.owner, wsPolicies, map[string]any{"target_type": "user", "target_user_id": memberID,
		"selector_type": "namespace", "selector": "payments", "effect": "allow", "enabled": false})
	notified("create")
	if b.Position != 2 || b.ApprovalTTLMinutes != 10 || b.AllowSelfApproval || w1.Level != "workspace" || w1.Position != 1 || w1.Enabled {
		t.Fatalf("defaults: %+v %+v", b, w1)
	}
	if o, w := versions(t, f.env); o != org0+2 || w != ws0+1 {
		t.Fatalf("after a workspace rule: versions %d/%d", o, w)
	}

	// Validation names the field and keeps the rest out of the store.
	bad := []struct {
		name  string
		body  map[string]any
		field string
		want  string
	}{
		{"bad pattern", map[string]any{"target_type": "everyone", "selector_type": "pattern", "selector": "github.repo*", "effect": "deny"}, "selector", "must be a whole segment"},
		{"CEL error with position", map[string]any{"target_type": "everyone", "selector_type": "all", "condition": "args.amount >\n  > 3", "effect": "deny"}, "condition", "Line 2, column 3"},
		{"CEL not bool", map[string]any{"target_type": "everyone", "selector_type": "all", "condition": "args.amount + 1", "effect": "deny"}, "condition", "Line 1"},
		{"unknown user", map[string]any{"target_type": "user", "target_user_id": f.userID("outsider@globex.test"), "selector_type": "all", "effect": "deny"}, "target_user_id", "not one"},
		{"unknown key", map[string]any{"target_type": "key", "target_key_id": 999999, "selector_type": "all", "effect": "deny"}, "target_key_id", "API key"},
		{"unknown source", map[string]any{"target_type": "everyone", "selector_type": "source", "selector": "src_nope", "effect": "deny"}, "selector", "source"},
		{"bad namespace", map[string]any{"target_type": "everyone", "selector_type": "namespace", "selector": "Git Hub", "effect": "deny"}, "selector", "namespace"},
		{"TTL out of range", map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "require_approval", "approval_ttl_minutes": 10081}, "approval_ttl_minutes", "10080"},
		{"negative TTL", map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "require_approval", "approval_ttl_minutes": -5}, "approval_ttl_minutes", "1 to"},
		{"bad role", map[string]any{"target_type": "role", "target_role": "king", "selector_type": "all", "effect": "deny"}, "target_role", "owner, admin"},
		{"bad effect", map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "maybe"}, "effect", "allow"},
		{"bad target", map[string]any{"target_type": "robots", "selector_type": "all", "effect": "deny"}, "target_type", "everyone"},
		{"long note", map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "deny", "note": strings.Repeat("n", 501)}, "note", "500"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) { invalid(t, f.owner, "POST", wsPolicies, tc.body, tc.field, tc.want) })
	}
	if got := listPolicies(t, f.owner, wsPolicies); len(got) != 1 {
		t.Fatalf("invalid rules were stored: %+v", got)
	}
	if o, w := versions(t, f.env); o != org0+2 || w != ws0+1 {
		t.Fatalf("refused writes bumped versions: %d/%d", o, w)
	}
	// A key of another workspace cannot be a workspace rule's target, but
	// an organization rule may target any key of the organization.
	res := f.owner.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Other"})
	if res.status != http.StatusCreated {
		t.Fatalf("create workspace: %d %s", res.status, res.body)
	}
	other := createKey(t, f.member, "/api/v1/orgs/acme/workspaces/other/api-keys", map[string]any{"name": "other key"})
	invalid(t, f.owner, "POST", wsPolicies, map[string]any{"target_type": "key", "target_key_id": other.ID, "selector_type": "all", "effect": "deny"},
		"target_key_id", "this workspace")
	k := createPolicy(t, f.owner, orgPolicies, map[string]any{"target_type": "key", "target_key_id": other.ID, "selector_type": "all", "effect": "deny"})
	notified("create")

	// PATCH changes what it names and keeps the rest; the result is checked whole.
	res = f.owner.api("PATCH", orgPolicies+"/"+strconv.FormatInt(a.ID, 10), map[string]any{"effect": "deny", "enabled": false})
	var patched policyResp
	res.json(t, &patched)
	if res.status != http.StatusOK || patched.Effect != "deny" || patched.Enabled || patched.Condition != a.Condition ||
		patched.Selector != "payments.**" || patched.Position != 1 || *patched.TargetRole != "member" {
		t.Fatalf("patch: %d %+v", res.status, patched)
	}
	notified("patch")
	invalid(t, f.owner, "PATCH", orgPolicies+"/"+strconv.FormatInt(a.ID, 10), map[string]any{"condition": "args.x ==="}, "condition", "Line 1, column")
	if res := f.owner.api("PATCH", orgPolicies+"/"+strconv.FormatInt(a.ID, 10), map[string]any{"colour": "red"}); res.status != http.StatusBadRequest {
		t.Fatalf("unknown field: %d %s", res.status, res.body)
	}
	// Switching the target drops the old one.
	res = f.owner.api("PATCH", orgPolicies+"/"+strconv.FormatInt(a.ID, 10), map[string]any{"target_type": "everyone"})
	res.json(t, &patched)
	if patched.TargetType != "everyone" || patched.TargetRole != nil {
		t.Fatalf("retarget: %+v", patched)
	}
	notified("patch")

	// Moving swaps neighbours; the ends stay put.
	if got := ids(listPolicies(t, f.viewer, orgPolicies)); !equalIDs(got, a.ID, b.ID, k.ID) {
		t.Fatalf("order %v", got)
	}
	move := func(id int64, dir string) policyResp {
		t.Helper()
		res := f.admin.api("POST", orgPolicies+"/"+strconv.FormatInt(id, 10)+"/move", map[string]any{"direction": dir})
		if res.status != http.StatusOK {
			t.Fatalf("move %d %s: %d %s", id, dir, res.status, res.body)
		}
		notified("move")
		var p policyResp
		res.json(t, &p)
		return p
	}
	if p := move(k.ID, "up"); p.Position != 2 {
		t.Fatalf("moved up to %d", p.Position)
	}
	if got := ids(listPolicies(t, f.owner, orgPolicies)); !equalIDs(got, a.ID, k.ID, b.ID) {
		t.Fatalf("after up: %v", got)
	}
	move(a.ID, "up")
	move(b.ID, "down")
	move(a.ID, "down")
	if got := ids(listPolicies(t, f.owner, orgPolicies)); !equalIDs(got, k.ID, a.ID, b.ID) {
		t.Fatalf("after moves: %v", got)
	}
	invalid(t, f.owner, "POST", orgPolicies+"/"+strconv.FormatInt(a.ID, 10)+"/move", map[string]any{"direction": "sideways"}, "direction", "up or down")

	// Deleting closes the gap.
	o1, _ := versions(t, f.env)
	if res := f.owner.api("DELETE", orgPolicies+"/"+strconv.FormatInt(k.ID, 10), nil); res.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}
	notified("delete")
	got := listPolicies(t, f.owner, orgPolicies)
	if !equalIDs(ids(got), a.ID, b.ID) || got[0].Position != 1 || got[1].Position != 2 {
		t.Fatalf("after delete: %+v", got)
	}
	if o, _ := versions(t, f.env); o != o1+1 {
		t.Fatalf("delete did not bump the version: %d, was %d", o, o1)
	}
	if res := f.owner.api("GET", orgPolicies+"/"+strconv.FormatInt(k.ID, 10), nil); res.status != http.StatusNotFound {
		t.Fatalf("deleted rule: %d", res.status)
	}
}

func equalIDs(got []int64, want ...int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestPoliciesIsolation: rules of another organization, of another
// workspace or of the other level are 404 everywhere.
func TestPoliciesIsolation(t *testing.T) {
	f := newFixture(t)
	globex := createPolicy(t, f.outsider, "/api/v1/orgs/globex/workspaces/default/policies",
		map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "deny"})
	globexOrg := createPolicy(t, f.outsider, "/api/v1/orgs/globex/policies",
		map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "deny"})
	if res := f.owner.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Second"}); res.status != http.StatusCreated {
		t.Fatalf("workspace: %d %s", res.status, res.body)
	}
	wsA := createPolicy(t, f.owner, wsPolicies, map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "allow"})
	orgA := createPolicy(t, f.owner, orgPolicies, map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "allow"})
	second := "/api/v1/orgs/acme/workspaces/second/policies"

	for _, p := range []struct {
		base string
		id   int64
	}{
		{wsPolicies, globex.ID}, {orgPolicies, globex.ID}, {orgPolicies, globexOrg.ID}, {wsPolicies, globexOrg.ID},
		{second, wsA.ID}, {orgPolicies, wsA.ID}, {wsPolicies, orgA.ID}, {second, orgA.ID},
	} {
		path := p.base + "/" + strconv.FormatInt(p.id, 10)
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{"GET", path, nil}, {"PATCH", path, map[string]any{"effect": "deny"}}, {"DELETE", path, nil},
			{"POST", path + "/move", map[string]any{"direction": "up"}},
		} {
			if res := f.owner.api(req.method, req.path, req.body); res.status != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 404: %s", req.method, req.path, res.status, excerpt(res.body))
			}
		}
		for _, action := range []string{"/edit"} {
			if res := f.owner.get(consolePath(p.base) + "/" + strconv.FormatInt(p.id, 10) + action); res.status != http.StatusNotFound {
				t.Errorf("GET console %s: %d, want 404", p.base, res.status)
			}
		}
		for _, action := range []string{"", "/move", "/enabled", "/delete"} {
			form := url.Values{"direction": {"up"}, "enabled": {"false"}, "target_type": {"everyone"}, "selector_type": {"all"}, "effect": {"deny"}}
			if res := f.owner.post(consolePath(p.base)+"/"+strconv.FormatInt(p.id, 10)+action, form, false); res.status != http.StatusNotFound {
				t.Errorf("POST console %s%s: %d, want 404", p.base, action, res.status)
			}
		}
	}
	// The workspace rule is not in the second workspace's list, nor in the
	// organization's; Globex's rules are untouched.
	if got := listPolicies(t, f.owner, second); len(got) != 0 {
		t.Fatalf("second workspace lists %+v", got)
	}
	if got := ids(listPolicies(t, f.owner, orgPolicies)); !equalIDs(got, orgA.ID) {
		t.Fatalf("org lists %v", got)
	}
	if got := listPolicies(t, f.outsider, "/api/v1/orgs/globex/workspaces/default/policies"); len(got) != 1 || got[0].Effect != "deny" {
		t.Fatalf("globex rules changed: %+v", got)
	}
	// Outsiders do not see Acme's rules at all.
	if res := f.outsider.api("GET", orgPolicies, nil); res.status != http.StatusNotFound {
		t.Fatalf("outsider: %d", res.status)
	}
}

// consolePath turns an API policies path into the console's.
func consolePath(api string) string {
	p := strings.TrimPrefix(api, "/api/v1/orgs/")
	p = strings.Replace(p, "/workspaces/", "/w/", 1)
	return "/o/" + p
}

// TestPoliciesRoles: everyone in the organization reads and simulates;
// only owners and admins write.
func TestPoliciesRoles(t *testing.T) {
	f := newFixture(t)
	p := createPolicy(t, f.admin, wsPolicies, map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "allow"})
	id := strconv.FormatInt(p.ID, 10)
	body := map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "deny"}
	for _, who := range []string{"member", "viewer"} {
		c := f.as(who)
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{"POST", wsPolicies, body}, {"POST", orgPolicies, body}, {"PATCH", wsPolicies + "/" + id, body},
			{"DELETE", wsPolicies + "/" + id, nil}, {"POST", wsPolicies + "/" + id + "/move", map[string]any{"direction": "up"}},
		} {
			if res := c.api(req.method, req.path, req.body); res.status != http.StatusForbidden {
				t.Errorf("%s %s as %s: %d, want 403", req.method, req.path, who, res.status)
			}
		}
		for _, path := range []string{"/o/acme/w/default/policies", "/o/acme/w/default/policies/" + id + "/delete",
			"/o/acme/w/default/policies/" + id + "/move", "/o/acme/w/default/policies/check", "/o/acme/policies"} {
			if res := c.post(path, url.Values{"direction": {"up"}, "condition": {"true"}}, false); res.status != http.StatusForbidden {
				t.Errorf("POST %s as %s: %d, want 403", path, who, res.status)
			}
		}
		if got := listPolicies(t, c, wsPolicies); len(got) != 1 {
			t.Errorf("%s lists %+v", who, got)
		}
		res := c.get("/o/acme/w/default/policies")
		if res.status != http.StatusOK || !strings.Contains(res.body, `data-testid="rule-row"`) || strings.Contains(res.body, "New rule") ||
			strings.Contains(res.body, `data-testid="rule-delete"`) || !strings.Contains(res.body, `data-testid="simulator"`) {
			t.Errorf("%s page: %d %s", who, res.status, excerpt(res.body))
		}
		if res := c.get("/o/acme/w/default/policies/new"); res.status != http.StatusForbidden {
			t.Errorf("%s new page: %d", who, res.status)
		}
		// Simulating is reading: a tool that does not exist is a field error, not a 403.
		invalid(t, c, "POST", wsPolicies+"/simulate", map[string]any{"user_id": f.userID(who + "@acme.test"), "path": "nope.nothing"}, "path", "No tool")
	}
	if got := listPolicies(t, f.owner, wsPolicies); len(got) != 1 || got[0].Effect != "allow" {
		t.Fatalf("forbidden writes changed the rules: %+v", got)
	}
}

// TestPoliciesSimulate: the simulator finds the deciding rule across
// levels, evaluates CEL conditions on arguments, and falls back to the
// tool's default with its source's override.
func TestPoliciesSimulate(t *testing.T) {
	f := newFixture(t)
	src, write, read := paymentsSource(t, f.owner)
	memberID, ownerID := f.userID("member@acme.test"), f.userID("owner@acme.test")
	simulate := func(path string, body map[string]any) simulationResp {
		t.Helper()
		res := f.viewer.api("POST", path, body)
		if res.status != http.StatusOK {
			t.Fatalf("simulate %v: %d %s", body, res.status, res.body)
		}
		var s simulationResp
		res.json(t, &s)
		return s
	}
	sim := func(body map[string]any) simulationResp { return simulate(wsPolicies+"/simulate", body) }

	// No rule: each tool's default.
	s := sim(map[string]any{"user_id": memberID, "path": write, "arguments": map[string]any{"amount": 5}})
	if s.Effect != "require_approval" || s.Level != "default" || s.Rule != nil || len(s.Steps) != 0 || s.Tool.Method != "POST" ||
		s.Tool.DefaultApproval != "required" || s.Caller.Role != "member" || s.Reason == "" {
		t.Fatalf("write by default: %+v", s)
	}
	if s := sim(map[string]any{"user_id": memberID, "path": read}); s.Effect != "allow" || s.Level != "default" || s.Tool.Method != "GET" {
		t.Fatalf("read by default: %+v", s)
	}

	// The source's override applies when no rule matches.
	res := f.owner.api("PATCH", wsSources+"/"+src.ID, map[string]any{"approval_override": "required"})
	if res.status != http.StatusOK || !strings.Contains(res.body, `"approval_override":"required"`) {
		t.Fatalf("override: %d %s", res.status, res.body)
	}
	if s := sim(map[string]any{"user_id": memberID, "path": read}); s.Effect != "require_approval" || s.Level != "default" ||
		s.Tool.ApprovalOverride != "required" || !strings.Contains(s.Reason, "source") {
		t.Fatalf("read with override required: %+v", s)
	}
	invalid(t, f.owner, "PATCH", wsSources+"/"+src.ID, map[string]any{"approval_override": "sometimes"}, "approval_override", "auto, required")
	invalid(t, f.owner, "POST", wsSources, map[string]any{"name": "Second", "type": "openapi", "approval_override": "never",
		"config": map[string]any{"spec": json.RawMessage(paymentsSpec)}}, "approval_override", "auto, required")
	f.owner.api("PATCH", wsSources+"/"+src.ID, map[string]any{"approval_override": "auto"})
	if s := sim(map[string]any{"user_id": memberID, "path": write}); s.Effect != "allow" || s.Level != "default" {
		t.Fatalf("write with override auto: %+v", s)
	}
	f.owner.api("PATCH", wsSources+"/"+src.ID, map[string]any{"approval_override": nil})
	if s := sim(map[string]any{"user_id": memberID, "path": write}); s.Effect != "require_approval" {
		t.Fatalf("override cleared: %+v", s)
	}

	// An organization deny binds over a workspace allow.
	allow := createPolicy(t, f.owner, wsPolicies, map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "allow"})
	deny := createPolicy(t, f.owner, orgPolicies, map[string]any{"target_type": "role", "target_role": "member",
		"selector_type": "namespace", "selector": "payments", "effect": "deny", "note": "members never pay"})
	s = sim(map[string]any{"user_id": memberID, "path": write})
	if s.Effect != "deny" || s.Level != "organization" || s.Rule == nil || s.Rule.ID != deny.ID || len(s.Steps) == 0 ||
		s.Steps[0].RuleID != deny.ID || !s.Steps[0].Matched {
		t.Fatalf("org deny over ws allow: %+v", s)
	}
	s = sim(map[string]any{"user_id": ownerID, "path": write})
	if s.Effect != "allow" || s.Level != "workspace" || s.Rule == nil || s.Rule.ID != allow.ID || s.Caller.Role != "owner" {
		t.Fatalf("owner: %+v", s)
	}
	// A key acts as its owner, with the owner's role.
	key := createKey(t, f.member, "/api/v1/orgs/acme/workspaces/default/api-keys", map[string]any{"name": "ci"})
	s = sim(map[string]any{"key_id": key.ID, "path": write})
	if s.Effect != "deny" || s.Caller.KeyID != key.ID || s.Caller.UserID != memberID {
		t.Fatalf("by key: %+v", s)
	}

	// A CEL condition on the arguments.
	f.owner.api("DELETE", orgPolicies+"/"+strconv.FormatInt(deny.ID, 10), nil)
	big := createPolicy(t, f.owner, wsPolicies, map[string]any{"target_type": "everyone", "selector_type": "pattern", "selector": "payments.**",
		"condition": "has(args.amount) && args.amount > 1000", "effect": "require_approval", "approval_ttl_minutes": 45})
	f.owner.api("POST", wsPolicies+"/"+strconv.FormatInt(big.ID, 10)+"/move", map[string]any{"direction": "up"})
	s = sim(map[string]any{"user_id": ownerID, "path": write, "arguments": map[string]any{"amount": 5000}})
	if s.Effect != "require_approval" || s.Rule == nil || s.Rule.ID != big.ID || s.ApprovalTTLMinutes != 45 {
		t.Fatalf("amount 5000: %+v", s)
	}
	s = sim(map[string]any{"user_id": ownerID, "path": write, "arguments": map[string]any{"amount": 10}})
	if s.Effect != "allow" || s.Rule == nil || s.Rule.ID != allow.ID || len(s.Steps) < 2 || s.Steps[0].RuleID != big.ID || s.Steps[0].Matched || s.Steps[0].Why == "" {
		t.Fatalf("amount 10: %+v", s)
	}

	// The organization's route simulates in the workspace it is given.
	s = simulate(orgPolicies+"/simulate", map[string]any{"workspace": "default", "user_id": ownerID, "path": write, "arguments": map[string]any{"amount": 5000}})
	if s.Effect != "require_approval" || s.Rule == nil || s.Rule.ID != big.ID {
		t.Fatalf("org route: %+v", s)
	}
	invalid(t, f.viewer, "POST", orgPolicies+"/simulate", map[string]any{"user_id": ownerID, "path": write}, "workspace", "Choose the workspace")
	invalid(t, f.viewer, "POST", orgPolicies+"/simulate", map[string]any{"workspace": "nope", "user_id": ownerID, "path": write}, "workspace", "No workspace")

	// Bad input is a field error.
	invalid(t, f.viewer, "POST", wsPolicies+"/simulate", map[string]any{"user_id": ownerID, "path": write, "arguments": "{amount"}, "arguments", "JSON object")
	invalid(t, f.viewer, "POST", wsPolicies+"/simulate", map[string]any{"user_id": ownerID, "path": write, "arguments": []int{1}}, "arguments", "JSON object")
	invalid(t, f.viewer, "POST", wsPolicies+"/simulate", map[string]any{"path": write}, "user_id", "Choose who calls")
	invalid(t, f.viewer, "POST", wsPolicies+"/simulate", map[string]any{"user_id": f.userID("outsider@globex.test"), "path": write}, "user_id", "member")
	invalid(t, f.viewer, "POST", wsPolicies+"/simulate", map[string]any{"key_id": 999999, "path": write}, "key_id", "API key")
	if res := f.viewer.api("POST", wsPolicies+"/simulate", map[string]any{"workspace": "default", "path": write}); res.status != http.StatusBadRequest {
		t.Fatalf("workspace on a workspace route: %d", res.status)
	}

	// The console's simulator shows the same decision with its steps.
	res = f.viewer.post("/o/acme/w/default/policies/simulate", url.Values{"caller": {"user:" + strconv.FormatInt(ownerID, 10)},
		"path": {write}, "arguments": {`{"amount": 5000}`}}, true)
	if res.status != http.StatusOK || !strings.Contains(res.body, `data-testid="sim-effect">Require approval`) ||
		!strings.Contains(res.body, "workspace rule #"+strconv.FormatInt(big.ID, 10)+" at position 1") || !strings.Contains(res.body, `data-testid="sim-step"`) ||
		strings.Contains(res.body, "<html") {
		t.Fatalf("console simulate: %d %s", res.status, res.body)
	}
	res = f.viewer.post("/o/acme/w/default/policies/simulate", url.Values{"caller": {"user:" + strconv.FormatInt(ownerID, 10)},
		"path": {write}, "arguments": {`{"amount": 5000`}}, false)
	if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.body, `data-testid="error-arguments"`) ||
		!strings.Contains(res.body, "{&#34;amount&#34;: 5000") || !strings.Contains(res.body, "<html") {
		t.Fatalf("console simulate with bad JSON: %d %s", res.status, excerpt(res.body))
	}
	res = f.viewer.post("/o/acme/policies/simulate", url.Values{"workspace": {"default"}, "caller": {"key:" + strconv.FormatInt(key.ID, 10)},
		"path": {read}, "arguments": {""}}, true)
	if res.status != http.StatusOK || !strings.Contains(res.body, `data-testid="sim-effect">Allow`) || !strings.Contains(res.body, "API key ci") {
		t.Fatalf("console org simulate: %d %s", res.status, res.body)
	}
}

// TestPoliciesConsole walks the pages: the editor keeps what was typed and
// says what is wrong next to each field, the live check points at the
// problem, rules move, toggle and go away in place, and a workspace's page
// shows the organization's rules read-only first.
func TestPoliciesConsole(t *testing.T) {
	f := newFixture(t)
	src, _, _ := paymentsSource(t, f.owner)

	res := f.admin.get("/o/acme/w/default/policies")
	if res.status != http.StatusOK || !strings.Contains(res.body, "No rules yet: every tool follows its default") ||
		!strings.Contains(res.body, "New rule") || !strings.Contains(res.body, "Organization rules — bind every workspace") {
		t.Fatalf("empty page: %d %s", res.status, excerpt(res.body))
	}
	res = f.admin.get("/o/acme/w/default/policies/new")
	if res.status != http.StatusOK || !strings.Contains(res.body, `hx-post="/o/acme/w/default/policies/check"`) ||
		!strings.Contains(res.body, src.ID) || !strings.Contains(res.body, "member@acme.test") {
		t.Fatalf("new page: %d %s", res.status, excerpt(res.body))
	}

	// The live check.
	res = f.admin.post("/o/acme/w/default/policies/check", url.Values{"condition": {"args.amount >\n  = 5"}}, true)
	if res.status != http.StatusOK || !strings.Contains(res.body, "line 2, column 3") || !strings.Contains(res.body, `data-testid="condition-caret"`) {
		t.Fatalf("check error: %d %s", res.status, res.body)
	}
	res = f.admin.post("/o/acme/w/default/policies/check", url.Values{"condition": {"args.amount > 5"}}, true)
	if !strings.Contains(res.body, "Condition is valid") {
		t.Fatalf("check valid: %s", res.body)
	}
	res = f.admin.post("/o/acme/w/default/policies/check", url.Values{"condition": {"  "}}, true)
	if !strings.Contains(res.body, "No condition") {
		t.Fatalf("check empty: %s", res.body)
	}

	// Errors next to the fields, every value kept.
	form := url.Values{"target_type": {"role"}, "target_role": {"admin"}, "selector_type": {"pattern"}, "selector_pattern": {"payments.*x"},
		"condition": {"args.amount > "}, "effect": {"require_approval"}, "approval_ttl_minutes": {"99999"}, "note": {"keep me"},
		"enabled": {"true"}, "allow_self_approval": {"true"}}
	res = f.admin.post("/o/acme/w/default/policies", form, true)
	for _, want := range []string{`data-testid="error-selector_pattern"`, `data-testid="condition-error"`, `data-testid="error-approval_ttl_minutes"`,
		`value="payments.*x"`, "args.amount &gt; </textarea>", `value="99999"`, "keep me</textarea>", `<option value="admin" selected>`} {
		if !strings.Contains(res.body, want) {
			t.Errorf("422 form lacks %q", want)
		}
	}
	if res.status != http.StatusUnprocessableEntity || strings.Contains(res.body, "<html") {
		t.Fatalf("invalid create: %d %s", res.status, res.body)
	}
	// Fixed, it saves and lands on the list.
	form.Set("selector_pattern", "payments.*")
	form.Set("condition", "args.amount > 100")
	form.Set("approval_ttl_minutes", "90")
	res = f.admin.post("/o/acme/w/default/policies", form, false)
	if res.status != http.StatusSeeOther || !strings.HasPrefix(res.header.Get("Location"), "/o/acme/w/default/policies#rule-") {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	first := listPolicies(t, f.owner, wsPolicies)[0]
	if first.TargetType != "role" || *first.TargetRole != "admin" || first.Selector != "payments.*" || first.ApprovalTTLMinutes != 90 ||
		!first.AllowSelfApproval || !first.Enabled || first.Note != "keep me" {
		t.Fatalf("created from the console: %+v", first)
	}
	// A second rule, by source, disabled (no enabled box sent).
	res = f.admin.post("/o/acme/w/default/policies", url.Values{"target_type": {"everyone"}, "selector_type": {"source"},
		"selector_source": {src.ID}, "effect": {"deny"}}, false)
	if res.status != http.StatusSeeOther {
		t.Fatalf("create second: %d %s", res.status, excerpt(res.body))
	}
	second := listPolicies(t, f.owner, wsPolicies)[1]
	if second.Enabled || second.SelectorType != "source" || second.Selector != src.ID {
		t.Fatalf("second: %+v", second)
	}
	id1, id2 := strconv.FormatInt(first.ID, 10), strconv.FormatInt(second.ID, 10)

	res = f.viewer.get("/o/acme/w/default/policies")
	for _, want := range []string{"Role admin", "Pattern payments.*", "Source Payments", "args.amount &gt; 100", "Expires after 90 minutes · self-approval allowed"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("list lacks %q", want)
		}
	}

	// Edit keeps the rule's values; an invalid edit keeps the typed ones.
	res = f.admin.get("/o/acme/w/default/policies/" + id1 + "/edit")
	if res.status != http.StatusOK || !strings.Contains(res.body, `value="payments.*"`) || !strings.Contains(res.body, "Condition is valid") {
		t.Fatalf("edit page: %d %s", res.status, excerpt(res.body))
	}
	form.Set("target_type", "user")
	form.Set("target_user_id", "999999")
	res = f.admin.post("/o/acme/w/default/policies/"+id1, form, false)
	if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.body, `data-testid="error-target_user_id"`) || !strings.Contains(res.body, "<html") {
		t.Fatalf("invalid edit: %d %s", res.status, excerpt(res.body))
	}
	form.Set("target_user_id", strconv.FormatInt(f.userID("member@acme.test"), 10))
	if res := f.admin.post("/o/acme/w/default/policies/"+id1, form, true); res.status != http.StatusOK || !strings.Contains(res.header.Get("HX-Redirect"), "/o/acme/w/default/policies#rule-"+id1) {
		t.Fatalf("edit: %d %v %s", res.status, res.header, res.body)
	}

	// Move, toggle and delete swap the level's rules in place for htmx.
	res = f.admin.post("/o/acme/w/default/policies/"+id2+"/move", url.Values{"direction": {"up"}}, true)
	if res.status != http.StatusOK || !strings.HasPrefix(strings.TrimSpace(res.body), `<section class="card rules" id="rules-workspace"`) {
		t.Fatalf("move: %d %s", res.status, res.body)
	}
	if got := ids(listPolicies(t, f.owner, wsPolicies)); !equalIDs(got, second.ID, first.ID) {
		t.Fatalf("after move: %v", got)
	}
	if res := f.admin.post("/o/acme/w/default/policies/"+id2+"/enabled", url.Values{"enabled": {"true"}}, false); res.status != http.StatusSeeOther {
		t.Fatalf("enable: %d", res.status)
	}
	if !listPolicies(t, f.owner, wsPolicies)[0].Enabled {
		t.Fatal("not enabled")
	}
	res = f.admin.post("/o/acme/w/default/policies/"+id2+"/delete", nil, true)
	if res.status != http.StatusOK || strings.Contains(res.body, "rule-"+id2) || !strings.Contains(res.body, "rule-"+id1) {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}

	// An organization rule shows read-only on the workspace's page.
	res = f.owner.post("/o/acme/policies", url.Values{"target_type": {"everyone"}, "selector_type": {"namespace"}, "selector_namespace": {"payments"},
		"effect": {"deny"}, "enabled": {"true"}, "note": {"org wide"}}, false)
	if res.status != http.StatusSeeOther || !strings.HasPrefix(res.header.Get("Location"), "/o/acme/policies#rule-") {
		t.Fatalf("org create: %d %s", res.status, excerpt(res.body))
	}
	res = f.admin.get("/o/acme/w/default/policies")
	orgSection, wsSection, _ := strings.Cut(res.body, `id="rules-workspace"`)
	if !strings.Contains(orgSection, "org wide") || strings.Contains(orgSection, `data-testid="rule-edit"`) ||
		!strings.Contains(wsSection, `data-testid="rule-edit"`) {
		t.Fatalf("workspace page: %s", excerpt(res.body))
	}
	res = f.admin.get("/o/acme/policies")
	if !strings.Contains(res.body, "org wide") || !strings.Contains(res.body, `data-testid="rule-edit"`) || !strings.Contains(res.body, `name="workspace"`) {
		t.Fatalf("org page: %s", excerpt(res.body))
	}

	// The source form offers the approval override and the page shows it.
	res = f.owner.get(consoleSource(src.ID) + "/edit")
	if !strings.Contains(res.body, `name="approval_override"`) {
		t.Fatalf("source form lacks the approval override")
	}
	res = f.owner.get(consoleSource(src.ID))
	if !strings.Contains(res.body, "Each tool&#39;s default") {
		t.Fatalf("source page lacks the approval override: %s", excerpt(res.body))
	}
	edit := url.Values{"name": {"Payments"}, "type": {"openapi"}, "spec": {paymentsSpec}, "approval_override": {"sometimes"}}
	res = f.owner.post(consoleSource(src.ID), edit, false)
	if res.status != http.StatusUnprocessableEntity || !strings.Contains(res.body, `data-testid="error-approval_override"`) {
		t.Fatalf("bad override: %d %s", res.status, excerpt(res.body))
	}
	org0, _ := versions(t, f.env)
	edit.Set("approval_override", "required")
	if res := f.owner.post(consoleSource(src.ID), edit, false); res.status != http.StatusSeeOther {
		t.Fatalf("save override: %d %s", res.status, excerpt(res.body))
	}
	if res := f.owner.get(consoleSource(src.ID)); !strings.Contains(res.body, "Always require approval") {
		t.Fatalf("source page after the override: %s", excerpt(res.body))
	}
	if o, _ := versions(t, f.env); o != org0+1 {
		t.Fatalf("the override did not bump the organization's policy version: %d, was %d", o, org0)
	}
}

func consoleSource(id string) string { return "/o/acme/w/default/sources/" + id }
