package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
)

const activityWS = "/api/v1/orgs/acme/workspaces/default/activity"

// secretArgument is a value the agent passed under a secret-looking key;
// the gateway redacts it before the audit sees it.
const secretArgument = "ghp_activitySecretValue0123456789"

// activityItem is a call in the API.
type activityItem struct {
	ID             int64           `json:"id"`
	Tool           string          `json:"tool"`
	SourceID       string          `json:"source_id"`
	Via            string          `json:"via"`
	KeyID          *int64          `json:"key_id"`
	KeyName        *string         `json:"key_name"`
	UserID         *int64          `json:"user_id"`
	UserEmail      *string         `json:"user_email"`
	Arguments      json.RawMessage `json:"arguments"`
	Outcome        string          `json:"outcome"`
	Error          string          `json:"error"`
	UpstreamStatus *int            `json:"upstream_status"`
	StartedAt      string          `json:"started_at"`
	DurationUS     int64           `json:"duration_us"`
}

type activityList struct {
	Items      []activityItem `json:"items"`
	NextCursor *string        `json:"next_cursor"`
}

// tenantIDs returns an organization's and one of its workspaces' ids.
func (e *env) tenantIDs(org, ws string) (int64, int64) {
	e.t.Helper()
	var orgID, wsID int64
	err := e.store.DB().QueryRow(`SELECT o.id, w.id FROM organizations o JOIN workspaces w ON w.org_id = o.id
		WHERE o.slug = $1 AND w.slug = $2`, org, ws).Scan(&orgID, &wsID)
	if err != nil {
		e.t.Fatalf("tenant %s/%s: %v", org, ws, err)
	}
	return orgID, wsID
}

func (e *env) userID(email string) int64 {
	e.t.Helper()
	var id int64
	if err := e.store.DB().QueryRow(`SELECT id FROM users WHERE email = $1`, email).Scan(&id); err != nil {
		e.t.Fatalf("user %s: %v", email, err)
	}
	return id
}

// record writes calls through the real recorder and waits for them.
func (e *env) record(calls ...audit.Call) {
	e.t.Helper()
	r := audit.New(e.store, audit.Options{FlushInterval: time.Hour})
	for _, c := range calls {
		r.Record(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		e.t.Fatal(err)
	}
	if s := r.Stats(); s.Written != int64(len(calls)) {
		e.t.Fatalf("recorded %d of %d calls: %+v", s.Written, len(calls), s)
	}
}

// activityFixture is Acme's default workspace with five calls: two keys
// (one revoked since), the console, every filter dimension, and one call
// whose secret argument the gateway redacted.
type activityFixture struct {
	*fixture
	claude, cursor                               createdKey
	now                                          time.Time
	recent, failed, slow, console, redacted, old audit.Call
}

func newActivityFixture(t *testing.T) *activityFixture {
	f := &activityFixture{fixture: newFixture(t), now: time.Now()}
	f.claude = createKey(t, f.member, apiKeysWS, map[string]any{"name": "claude"})
	f.cursor = createKey(t, f.owner, apiKeysWS, map[string]any{"name": "cursor"})
	org, ws := f.tenantIDs("acme", "default")
	member, owner := f.userID("member@acme.test"), f.userID("owner@acme.test")
	viaKey := func(k createdKey, user int64, tool, outcome string, ago time.Duration) audit.Call {
		id := k.ID
		return audit.Call{OrgID: org, WorkspaceID: ws, KeyID: &id, UserID: user, Via: "mcp", Tool: tool, SourceID: "src_github",
			Arguments: json.RawMessage(`{"owner":"acme","repo":"toolgate"}`), Outcome: outcome, StartedAt: f.now.Add(-ago),
			Duration: 42 * time.Millisecond}
	}
	f.recent = viaKey(f.claude, member, "github.repos_get", audit.OutcomeOK, 10*time.Minute)
	f.recent.UpstreamStatus = 200
	f.failed = viaKey(f.claude, member, "github.issues_create", audit.OutcomeError, 2*time.Hour)
	f.failed.UpstreamStatus, f.failed.Error = 502, "the upstream answered 502 Bad Gateway"
	f.slow = viaKey(f.cursor, owner, "slack.post_message", audit.OutcomeTimeout, 72*time.Hour)
	f.slow.Duration = 30 * time.Second
	f.console = audit.Call{OrgID: org, WorkspaceID: ws, UserID: owner, Via: "console", Tool: "github.repos_get",
		Arguments: json.RawMessage(`{}`), Outcome: audit.OutcomeInvalid, Error: "/owner: missing property",
		StartedAt: f.now.Add(-40 * 24 * time.Hour), Duration: 300 * time.Microsecond}
	f.redacted = viaKey(f.claude, member, "github.auth_check", audit.OutcomeOK, time.Minute)
	f.redacted.Arguments = gateway.RedactArguments(json.RawMessage(`{"query":"whoami","token":"` + secretArgument + `"}`))
	f.record(f.recent, f.failed, f.slow, f.console, f.redacted)
	if res := f.owner.api("DELETE", fmt.Sprintf("%s/%d", apiKeysWS, f.cursor.ID), nil); res.status != http.StatusNoContent {
		t.Fatalf("revoke cursor: %d %s", res.status, res.body)
	}
	return f
}

// list asks the API with query q and returns the tools in order.
func (f *activityFixture) list(t *testing.T, q url.Values) ([]string, activityList) {
	t.Helper()
	res := f.viewer.api("GET", activityWS+"?"+q.Encode(), nil)
	if res.status != http.StatusOK {
		t.Fatalf("GET activity?%s: %d %s", q.Encode(), res.status, res.body)
	}
	var l activityList
	res.json(t, &l)
	var tools []string
	for _, it := range l.Items {
		tools = append(tools, it.Tool+"/"+it.Outcome)
	}
	return tools, l
}

// TestActivityAPIFilters: every filter narrows the list, pages follow the
// cursor, and the rows carry the key, the user and what came back.
func TestActivityAPIFilters(t *testing.T) {
	f := newActivityFixture(t)
	rfc := func(d time.Duration) string { return f.now.Add(-d).UTC().Format(time.RFC3339Nano) }
	claude, cursor := fmt.Sprint(f.claude.ID), fmt.Sprint(f.cursor.ID)
	all := "github.auth_check/ok github.repos_get/ok github.issues_create/error slack.post_message/timeout github.repos_get/invalid"
	for _, tc := range []struct {
		name string
		q    url.Values
		want string
	}{
		{"all, newest first", url.Values{}, all},
		{"exact tool", url.Values{"tool": {"github.repos_get"}}, "github.repos_get/ok github.repos_get/invalid"},
		{"tool prefix", url.Values{"tool": {"github.*"}}, "github.auth_check/ok github.repos_get/ok github.issues_create/error github.repos_get/invalid"},
		{"prefix is literal", url.Values{"tool": {"github_*"}}, ""},
		{"unknown tool", url.Values{"tool": {"github"}}, ""},
		{"key", url.Values{"key": {claude}}, "github.auth_check/ok github.repos_get/ok github.issues_create/error"},
		{"revoked key", url.Values{"key": {cursor}}, "slack.post_message/timeout"},
		{"console", url.Values{"key": {"console"}}, "github.repos_get/invalid"},
		{"outcome", url.Values{"outcome": {"error"}}, "github.issues_create/error"},
		{"since", url.Values{"since": {rfc(time.Hour)}}, "github.auth_check/ok github.repos_get/ok"},
		{"until", url.Values{"until": {rfc(24 * time.Hour)}}, "slack.post_message/timeout github.repos_get/invalid"},
		{"since and until", url.Values{"since": {rfc(3 * time.Hour)}, "until": {rfc(5 * time.Minute)}}, "github.repos_get/ok github.issues_create/error"},
		{"combined", url.Values{"tool": {"github.*"}, "key": {claude}, "outcome": {"ok"}}, "github.auth_check/ok github.repos_get/ok"},
	} {
		if got, _ := f.list(t, tc.q); strings.Join(got, " ") != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, strings.Join(got, " "), tc.want)
		}
	}

	// Pages of two follow the cursor to the end, with the filters kept.
	var seen []string
	q := url.Values{"limit": {"2"}}
	for range 5 {
		tools, l := f.list(t, q)
		seen = append(seen, tools...)
		if l.NextCursor == nil {
			break
		}
		if len(l.Items) != 2 {
			t.Fatalf("a page before the last has %d items", len(l.Items))
		}
		q.Set("cursor", *l.NextCursor)
	}
	if strings.Join(seen, " ") != all {
		t.Fatalf("paged: %q", strings.Join(seen, " "))
	}
	tools, l := f.list(t, url.Values{"limit": {"1"}, "tool": {"github.*"}})
	_, next := f.list(t, url.Values{"limit": {"10"}, "tool": {"github.*"}, "cursor": {*l.NextCursor}})
	if len(tools) != 1 || len(next.Items) != 3 || next.NextCursor != nil {
		t.Fatalf("filtered pages: %v then %d items", tools, len(next.Items))
	}

	// One row, whole.
	_, l = f.list(t, url.Values{"outcome": {"error"}})
	it := l.Items[0]
	if it.KeyID == nil || *it.KeyID != f.claude.ID || it.KeyName == nil || *it.KeyName != "claude" || it.UserEmail == nil ||
		*it.UserEmail != "member@acme.test" || it.Via != "mcp" || it.SourceID != "src_github" || it.UpstreamStatus == nil ||
		*it.UpstreamStatus != 502 || it.Error != f.failed.Error || it.DurationUS != 42000 ||
		string(it.Arguments) != `{"repo":"toolgate","owner":"acme"}` {
		t.Fatalf("row: %+v %s", it, it.Arguments)
	}
	if at, err := time.Parse(time.RFC3339Nano, it.StartedAt); err != nil || !at.Equal(f.failed.StartedAt.Truncate(time.Microsecond)) {
		t.Fatalf("started_at %q: %v", it.StartedAt, err)
	}
	res := f.viewer.api("GET", fmt.Sprintf("%s/%d", activityWS, it.ID), nil)
	var one activityItem
	res.json(t, &one)
	if res.status != http.StatusOK || one.ID != it.ID || one.Tool != "github.issues_create" {
		t.Fatalf("one call: %d %s", res.status, res.body)
	}
	_, l = f.list(t, url.Values{"key": {"console"}})
	if c := l.Items[0]; c.KeyID != nil || c.KeyName != nil || c.Via != "console" || c.UpstreamStatus != nil || c.UserEmail == nil || *c.UserEmail != "owner@acme.test" {
		t.Fatalf("console row: %+v", c)
	}
}

// TestActivityAPIRefusesBadFilters: each bad value is a 422 naming its field.
func TestActivityAPIRefusesBadFilters(t *testing.T) {
	f := newFixture(t)
	for q, field := range map[string]string{
		"tool=github*.x":                   "tool",
		"tool=" + strings.Repeat("a", 300): "tool",
		"key=abc":                          "key",
		"key=-3":                           "key",
		"outcome=exploded":                 "outcome",
		"since=yesterday":                  "since",
		"until=2026-13-01T00:00:00Z":       "until",
		"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z": "until",
		"limit=0":          "limit",
		"limit=201":        "limit",
		"limit=ten":        "limit",
		"cursor=%21%21%21": "cursor",
		"cursor=MTIz":      "cursor", // "123": no id
	} {
		res := f.member.api("GET", activityWS+"?"+q, nil)
		var body struct {
			Error struct {
				Code   string            `json:"code"`
				Fields map[string]string `json:"fields"`
			} `json:"error"`
		}
		res.json(t, &body)
		if res.status != http.StatusUnprocessableEntity || body.Error.Code != "invalid" || body.Error.Fields[field] == "" {
			t.Errorf("?%s: %d %s; want 422 naming %s", q, res.status, res.body, field)
		}
	}
	if res := f.member.api("GET", activityWS+"?limit=200", nil); res.status != http.StatusOK || strings.TrimSpace(res.body) != `{"items":[],"next_cursor":null}` {
		t.Fatalf("empty list: %d %s", res.status, res.body)
	}
}

// calls counts the rows of an Activity page.
func calls(body string) int { return strings.Count(body, `data-testid="call"`) }

// TestActivityPage: the console lists, filters, pages and shows one call;
// a redacted argument shows as [redacted] and its value appears nowhere.
func TestActivityPage(t *testing.T) {
	f := newActivityFixture(t)
	page := "/o/acme/w/default/activity"
	res := f.viewer.get(page)
	if res.status != http.StatusOK || calls(res.body) != 5 {
		t.Fatalf("page: %d, %d calls\n%s", res.status, calls(res.body), excerpt(res.body))
	}
	for _, want := range []string{"github.auth_check", "slack.post_message", "claude", "cursor (revoked)", "Console",
		"member@acme.test", "owner@acme.test", `class="badge danger" data-testid="outcome">timeout`, "502", "42 ms", "30.00 s", "0.3 ms",
		`<option value="console"`, fmt.Sprintf(`<option value="%d">cursor (revoked)</option>`, f.cursor.ID),
		`aria-current="page"`, `data-testid="activity-filters"`} {
		if !strings.Contains(res.body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(res.body, `<span>Activity</span><small class="soon-tag">`) {
		t.Error("Activity still marked soon in the workspace navigation")
	}

	for _, tc := range []struct {
		q    url.Values
		want int
	}{
		{url.Values{"outcome": {"error"}}, 1},
		{url.Values{"tool": {"github.*"}}, 4},
		{url.Values{"key": {fmt.Sprint(f.claude.ID)}}, 3},
		{url.Values{"key": {"console"}}, 1},
		{url.Values{"range": {"1h"}}, 2},
		{url.Values{"range": {"24h"}}, 3},
		{url.Values{"range": {"7d"}}, 4},
		{url.Values{"range": {"30d"}}, 4},
		{url.Values{"range": {"custom"}, "from": {f.now.Add(-96 * time.Hour).UTC().Format("2006-01-02T15:04")},
			"to": {f.now.Add(-24 * time.Hour).UTC().Format("2006-01-02T15:04")}}, 1},
		{url.Values{"from": {f.now.Add(-3 * time.Hour).UTC().Format("2006-01-02T15:04")}}, 3},
	} {
		res := f.member.get(page + "?" + tc.q.Encode())
		if res.status != http.StatusOK || calls(res.body) != tc.want {
			t.Errorf("?%s: %d, %d calls, want %d", tc.q.Encode(), res.status, calls(res.body), tc.want)
		}
	}
	if res := f.member.get(page + "?tool=nothing.here"); !strings.Contains(res.body, "No call matches") || !strings.Contains(res.body, "Clear filters") {
		t.Errorf("no match: %s", excerpt(res.body))
	}

	// htmx gets the part the filters swap.
	frag := f.member.do("GET", page+"?outcome=timeout", nil, "", true)
	if frag.status != http.StatusOK || strings.Contains(frag.body, "<html") || !strings.Contains(frag.body, `id="activity"`) || calls(frag.body) != 1 {
		t.Fatalf("fragment: %d %s", frag.status, excerpt(frag.body))
	}

	// Bad filters: 422, each message next to its field, the input kept.
	bad := f.member.do("GET", page+"?outcome=exploded&from=soon&tool=a*b&range=forever", nil, "", true)
	for _, want := range []string{`data-testid="error-outcome"`, `data-testid="error-from"`, `data-testid="error-tool"`,
		`data-testid="error-range"`, `value="soon"`, `value="a*b"`, "Fix the filters above"} {
		if !strings.Contains(bad.body, want) {
			t.Errorf("bad filters lack %q", want)
		}
	}
	if bad.status != http.StatusUnprocessableEntity || calls(bad.body) != 0 {
		t.Fatalf("bad filters: %d %s", bad.status, excerpt(bad.body))
	}
	if res := f.member.get(page + "?range=custom"); res.status != http.StatusUnprocessableEntity || !strings.Contains(res.body, "Enter a start, an end, or both.") {
		t.Errorf("custom range without times: %d", res.status)
	}
	if res := f.member.get(page + "?from=2026-01-02T10:00&to=2026-01-02T09:00"); res.status != http.StatusUnprocessableEntity || !strings.Contains(res.body, "Enter an end after the start.") {
		t.Errorf("end before start: %d", res.status)
	}

	// The detail: arguments pretty-printed, the secret redacted, the facts.
	id := regexp.MustCompile(`href="/o/acme/w/default/activity/(\d+)"><code>github.auth_check`).FindStringSubmatch(res.body)
	if id == nil {
		t.Fatalf("no link to the call in %s", excerpt(res.body))
	}
	detail := f.viewer.get(page + "/" + id[1])
	for _, want := range []string{`data-testid="call-tool">github.auth_check`, `&#34;token&#34;: &#34;[redacted]&#34;`,
		`&#34;query&#34;: &#34;whoami&#34;`, "claude", "member@acme.test", "/o/acme/w/default/sources/src_github"} {
		if !strings.Contains(detail.body, want) {
			t.Errorf("detail lacks %q\n%s", want, excerpt(detail.body))
		}
	}
	failed := regexp.MustCompile(`href="/o/acme/w/default/activity/(\d+)"><code>github.issues_create`).FindStringSubmatch(res.body)
	if d := f.viewer.get(page + "/" + failed[1]); !strings.Contains(d.body, "the upstream answered 502 Bad Gateway") || !strings.Contains(d.body, ">502<") {
		t.Errorf("failed call's detail: %s", excerpt(d.body))
	}
	for _, p := range []string{page, page + "/" + id[1], activityWS, fmt.Sprintf("%s/%s", activityWS, id[1])} {
		if body := f.owner.get(p).body; strings.Contains(body, secretArgument) || strings.Contains(body, secretArgument[8:]) {
			t.Fatalf("%s shows the secret argument", p)
		}
	}
	var row string
	if err := f.store.DB().QueryRow(`SELECT t::text FROM tool_calls t WHERE tool = 'github.auth_check'`).Scan(&row); err != nil ||
		strings.Contains(row, secretArgument) || !strings.Contains(row, "[redacted]") {
		t.Fatalf("stored row: %s %v", row, err)
	}
	if strings.Contains(logsOf(t), secretArgument) {
		t.Fatal("the log holds the secret argument")
	}
}

// TestActivityPagesOlder: the console shows 50 calls, then an "Older" link
// that keeps the filters and shows the rest.
func TestActivityPagesOlder(t *testing.T) {
	f := newFixture(t)
	org, ws := f.tenantIDs("acme", "default")
	owner := f.userID("owner@acme.test")
	now := time.Now()
	var batch []audit.Call
	for i := range 55 {
		at := now.Add(-time.Duration(i) * time.Second)
		if i == 50 {
			// The same start as the last call of the first page: the
			// cursor tells them apart by id.
			at = batch[49].StartedAt
		}
		batch = append(batch, audit.Call{OrgID: org, WorkspaceID: ws, UserID: owner, Via: "console", Tool: fmt.Sprintf("bulk.t%02d", i),
			Outcome: audit.OutcomeOK, StartedAt: at})
	}
	batch = append(batch, audit.Call{OrgID: org, WorkspaceID: ws, UserID: owner, Via: "console", Tool: "other.x",
		Outcome: audit.OutcomeOK, StartedAt: now.Add(-time.Hour)})
	f.record(batch...)
	page := "/o/acme/w/default/activity"
	tools := regexp.MustCompile(`<code>(bulk\.t\d\d|other\.x)</code>`)
	seen := map[string]int{}
	first := f.member.get(page + "?tool=bulk.*")
	for _, m := range tools.FindAllStringSubmatch(first.body, -1) {
		seen[m[1]]++
	}
	if calls(first.body) != 50 || !strings.Contains(first.body, "bulk.t00") || !strings.Contains(first.body, "bulk.t48") {
		t.Fatalf("first page: %d calls", calls(first.body))
	}
	m := regexp.MustCompile(`href="([^"]+)" hx-get="[^"]+" hx-target="#activity" hx-push-url="true" rel="next" data-testid="older"`).FindStringSubmatch(first.body)
	if m == nil {
		t.Fatalf("no Older link: %s", excerpt(first.body))
	}
	older := f.member.get(strings.ReplaceAll(m[1], "&amp;", "&"))
	for _, m := range tools.FindAllStringSubmatch(older.body, -1) {
		seen[m[1]]++
	}
	if calls(older.body) != 5 || !strings.Contains(older.body, "bulk.t54") || strings.Contains(older.body, `data-testid="older"`) {
		t.Fatalf("older page: %d calls %s", calls(older.body), excerpt(older.body))
	}
	if len(seen) != 55 || seen["other.x"] != 0 {
		t.Fatalf("the two pages show %d distinct calls, want the 55 bulk ones: %v", len(seen), seen)
	}
	for tool, n := range seen {
		if n != 1 {
			t.Errorf("%s shown %d times", tool, n)
		}
	}
	if res := f.member.get(page + "?cursor=bad"); res.status != http.StatusUnprocessableEntity || !strings.Contains(res.body, `data-testid="error-cursor"`) {
		t.Fatalf("bad cursor: %d", res.status)
	}
}

// TestActivityEmptyState: a workspace without calls says how to get some.
func TestActivityEmptyState(t *testing.T) {
	f := newFixture(t)
	res := f.viewer.get("/o/acme/w/default/activity")
	if res.status != http.StatusOK || !strings.Contains(res.body, "No calls yet") || !strings.Contains(res.body, "Connect an agent") ||
		!strings.Contains(res.body, `href="/o/acme/w/default/api-keys" data-testid="connect-agent"`) || calls(res.body) != 0 {
		t.Fatalf("empty state: %d %s", res.status, excerpt(res.body))
	}
}

// TestActivityIsolation: another workspace's and another organization's
// calls never show, by list or by id; outsiders and anonymous callers get
// nothing; every member, viewers included, reads.
func TestActivityIsolation(t *testing.T) {
	f := newFixture(t)
	if res := f.owner.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Other"}); res.status != http.StatusCreated {
		t.Fatalf("create workspace: %d %s", res.status, res.body)
	}
	acme, acmeDefault := f.tenantIDs("acme", "default")
	_, acmeOther := f.tenantIDs("acme", "other")
	globex, globexDefault := f.tenantIDs("globex", "default")
	call := func(org, ws int64, tool string) audit.Call {
		return audit.Call{OrgID: org, WorkspaceID: ws, Via: "console", Tool: tool, Outcome: audit.OutcomeOK, StartedAt: time.Now()}
	}
	f.record(call(acme, acmeDefault, "mine.tool"), call(acme, acmeOther, "other.workspace"), call(globex, globexDefault, "globex.secret"))
	ids := map[string]int64{}
	rows, err := f.store.DB().Query(`SELECT tool, id FROM tool_calls`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tool string
		var id int64
		if err := rows.Scan(&tool, &id); err != nil {
			t.Fatal(err)
		}
		ids[tool] = id
	}
	rows.Close()

	page := "/o/acme/w/default/activity"
	for _, who := range []*client{f.owner, f.viewer} {
		list := who.get(page)
		api := who.api("GET", activityWS, nil)
		for _, body := range []string{list.body, api.body} {
			if !strings.Contains(body, "mine.tool") || strings.Contains(body, "other.workspace") || strings.Contains(body, "globex.secret") {
				t.Fatalf("list shows another tenant's calls or misses its own: %s", excerpt(body))
			}
		}
		for _, tool := range []string{"other.workspace", "globex.secret"} {
			if res := who.get(fmt.Sprintf("%s/%d", page, ids[tool])); res.status != http.StatusNotFound || strings.Contains(res.body, tool) {
				t.Errorf("page of %s: %d", tool, res.status)
			}
			if res := who.api("GET", fmt.Sprintf("%s/%d", activityWS, ids[tool]), nil); res.status != http.StatusNotFound || strings.Contains(res.body, tool) {
				t.Errorf("API of %s: %d", tool, res.status)
			}
		}
	}
	// Globex's owner reaches Acme's calls neither through Acme nor through Globex.
	mine := fmt.Sprintf("%d", ids["mine.tool"])
	for path, want := range map[string]int{
		page:                                   404,
		page + "/" + mine:                      404,
		activityWS:                             404,
		activityWS + "/" + mine:                404,
		"/o/globex/w/default/activity/" + mine: 404,
		"/api/v1/orgs/globex/workspaces/default/activity/" + mine: 404,
	} {
		if res := f.outsider.get(path); res.status != want || strings.Contains(res.body, "mine.tool") {
			t.Errorf("outsider %s: %d, want %d", path, res.status, want)
		}
	}
	if res := f.outsider.get("/o/globex/w/default/activity"); res.status != 200 || !strings.Contains(res.body, "globex.secret") || strings.Contains(res.body, "mine.tool") {
		t.Errorf("outsider's own activity: %d", res.status)
	}
	if res := f.anon.get(page); res.status != http.StatusSeeOther {
		t.Errorf("anonymous page: %d", res.status)
	}
	if res := f.anon.api("GET", activityWS, nil); res.status != http.StatusUnauthorized {
		t.Errorf("anonymous API: %d", res.status)
	}
	if res := f.member.get(page + "/nope"); res.status != http.StatusNotFound {
		t.Errorf("non-numeric id: %d", res.status)
	}
}

// TestActivityBrowser walks the Activity page in a real browser: the list,
// a filter picked from a select (htmx swaps the list and the URL follows),
// a bad custom range refused next to its field, and one call's detail.
// Screenshots go to OutputDir/activity.
func TestActivityBrowser(t *testing.T) {
	f := newActivityFixture(t)
	browserCtx, shots := startBrowser(t, 2*time.Minute, "activity")
	b := newTab(t, browserCtx, f.srv.URL, shots)
	b.signIn("viewer@acme.test")

	b.open("/o/acme/w/default")
	b.clickAndLoad(testid("workspace-nav") + ` a[href="/o/acme/w/default/activity"]`)
	b.wantPath("/o/acme/w/default/activity")
	b.waitText(testid("calls"), "slack.post_message")
	b.shot("01-activity")

	b.pick(testid("field-outcome"), "error")
	waitSwap(t, b, "outcome=error")
	if got := b.text(testid("calls") + " tbody"); !strings.Contains(got, "github.issues_create") || strings.Contains(got, "slack.post_message") {
		t.Fatalf("filtered list: %q", got)
	}
	b.shot("02-filtered")

	b.pick(testid("field-outcome"), "")
	waitSwap(t, b, "outcome=&")
	b.pick(testid("field-range"), "custom")
	b.waitText(testid("error-from"), "Enter a start, an end, or both.")
	b.shot("03-custom-range-refused")

	b.open("/o/acme/w/default/activity?tool=github.auth_check")
	b.clickAndLoad(testid("call") + " td a")
	b.wantText(testid("call-tool"), "github.auth_check")
	if args := b.text(testid("call-arguments")); !strings.Contains(args, `"token": "[redacted]"`) || strings.Contains(args, secretArgument) {
		t.Fatalf("arguments: %q", args)
	}
	b.shot("04-call")
	b.checkConsole()
}

// waitSwap waits until htmx has swapped the filtered list in and pushed a
// URL containing want, then for it to process the new form (htmx does
// that once the swap settles), as a person reading the result would.
func waitSwap(t *testing.T, b *tab, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if loc, err := chromedp.Run(b.ctx, chromedp.Location()); err == nil && strings.Contains(loc, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the URL never came to contain %q", want)
		}
	}
	time.Sleep(300 * time.Millisecond)
}
