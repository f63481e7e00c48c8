package handlers_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

const connectPage = "/o/acme/w/default/connect"

// TestConnectPageRoutes is who sees the page and who may create a key there.
func TestConnectPageRoutes(t *testing.T) {
	f := newFixture(t)
	f.run(t, []scenario{
		{name: "page", as: "viewer", method: "GET", path: connectPage, wantStatus: http.StatusOK,
			wantContains: []string{"Connect an agent", "http://127.0.0.1:8080/mcp", "tgk_...", `data-testid="connect-key-viewer"`,
				`href="/o/acme/w/default/connect" aria-current="page"`}},
		{name: "page", as: "member", method: "GET", path: connectPage, wantStatus: http.StatusOK,
			wantContains: []string{`data-testid="connect-key-form"`, `claude mcp add --transport http toolgate http://127.0.0.1:8080/mcp --header &#34;Authorization: Bearer tgk_...&#34;`}},
		{name: "direct mode", as: "member", method: "GET", path: connectPage + "?mode=direct", wantStatus: http.StatusOK,
			wantContains: []string{"http://127.0.0.1:8080/mcp?mode=direct", `aria-current="page" data-testid="mode-direct"`, `name="mode" value="direct"`}},
		{name: "mode switch fragment", as: "member", method: "GET", path: connectPage + "?mode=direct", htmx: true, wantStatus: http.StatusOK,
			wantContains: []string{`id="connect-body"`, "/mcp?mode=direct"}},
		{name: "other organization", as: "outsider", method: "GET", path: connectPage, wantStatus: http.StatusNotFound},
		{name: "anonymous", as: "anonymous", method: "GET", path: connectPage, wantStatus: http.StatusSeeOther},
		{name: "create key", as: "viewer", method: "POST", path: connectPage, form: url.Values{"name": {"mine"}, "expires_in_days": {"90"}},
			wantStatus: http.StatusForbidden},
		{name: "create key", as: "outsider", method: "POST", path: connectPage, form: url.Values{"name": {"mine"}, "expires_in_days": {"90"}},
			wantStatus: http.StatusNotFound},
		{name: "link from API keys", as: "member", method: "GET", path: "/o/acme/w/default/api-keys", wantStatus: http.StatusOK,
			wantContains: []string{`href="/o/acme/w/default/connect" data-testid="connect-agent"`}},
	})
}

// TestConnectPageCreatesAKey creates a key on the page with htmx and
// without: bad input is shown next to its field, a new key fills every
// snippet once, in the mode the page shows, and is a working key.
func TestConnectPageCreatesAKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	authn := &auth.Authenticator{Store: f.store}

	res := f.member.post(connectPage, url.Values{"name": {""}, "mode": {"direct"}, "expires_in_days": {"9999"}}, true)
	if res.status != http.StatusUnprocessableEntity || strings.Contains(res.body, "<html") ||
		!regexp.MustCompile(`data-testid="error-name">[^<]+<`).MatchString(res.body) ||
		!strings.Contains(res.body, `data-testid="error-expires_in_days">Choose between 1 and 366 days`) ||
		!strings.Contains(res.body, `name="mode" value="direct"`) {
		t.Fatalf("invalid form: %d %s", res.status, excerpt(res.body))
	}

	// With htmx: the body comes back with the key in place of tgk_....
	res = f.member.post(connectPage, url.Values{"name": {"laptop"}, "mode": {"direct"}, "expires_in_days": {"30"}}, true)
	key := regexp.MustCompile(`data-testid="connect-key-value">(tgk_[a-z0-9]+)<`).FindStringSubmatch(res.body)
	if res.status != http.StatusOK || key == nil || !strings.Contains(res.body, "it will not be shown again") || strings.Contains(res.body, "tgk_...") {
		t.Fatalf("create with htmx: %d %s", res.status, excerpt(res.body))
	}
	snippets := snippetsOf(t, res.body)
	if len(snippets) != 5 {
		t.Fatalf("snippets: %v", snippets)
	}
	mcpURL, bearer := "http://127.0.0.1:8080/mcp?mode=direct", "Bearer "+key[1]
	for id, code := range snippets {
		if !strings.Contains(code, mcpURL) || !strings.Contains(code, bearer) {
			t.Errorf("%s lacks the URL or the key:\n%s", id, code)
		}
	}
	if want := `claude mcp add --transport http toolgate '` + mcpURL + `' --header "Authorization: ` + bearer + `"`; snippets["snippet-claude-code"] != want {
		t.Errorf("Claude Code: %s\nwant %s", snippets["snippet-claude-code"], want)
	}
	var cursor struct {
		MCPServers map[string]struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(snippets["snippet-cursor"]), &cursor); err != nil || cursor.MCPServers["toolgate"].URL != mcpURL ||
		cursor.MCPServers["toolgate"].Headers["Authorization"] != bearer {
		t.Errorf("Cursor: %v %s", err, snippets["snippet-cursor"])
	}
	var vscode struct {
		Servers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(snippets["snippet-vscode"]), &vscode); err != nil || vscode.Servers["toolgate"].Type != "http" ||
		vscode.Servers["toolgate"].URL != mcpURL || vscode.Servers["toolgate"].Headers["Authorization"] != bearer {
		t.Errorf("VS Code: %v %s", err, snippets["snippet-vscode"])
	}
	var desktop struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(snippets["snippet-claude-desktop"]), &desktop); err != nil {
		t.Errorf("Claude Desktop: %v %s", err, snippets["snippet-claude-desktop"])
	} else if d := desktop.MCPServers["toolgate"]; d.Command != "npx" || strings.Join(d.Args, " ") != "-y mcp-remote "+mcpURL+" --header Authorization:${TOOLGATE_AUTH} --allow-http" ||
		d.Env["TOOLGATE_AUTH"] != bearer {
		t.Errorf("Claude Desktop: %+v", d)
	}
	g, err := authn.APIKey(ctx, key[1])
	if err != nil || g.Key.Name != "laptop" || g.Key.Mode != "direct" || g.User.Email != "member@acme.test" || g.Key.ExpiresAt == nil {
		t.Fatalf("the key: %+v %v", g, err)
	}

	// Without JavaScript: a redirect, the key shown once on the page.
	res = f.member.post(connectPage, url.Values{"name": {"desktop"}, "mode": {"search"}, "expires_in_days": {"0"}}, false)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != connectPage {
		t.Fatalf("create: %d %v", res.status, res.header)
	}
	shown := f.member.get(connectPage)
	key = regexp.MustCompile(`data-testid="connect-key-value">(tgk_[a-z0-9]+)<`).FindStringSubmatch(shown.body)
	if key == nil || !strings.Contains(shown.body, "toolgate http://127.0.0.1:8080/mcp --header &#34;Authorization: Bearer "+key[1]+"&#34;") {
		t.Fatalf("after create: %s", excerpt(shown.body))
	}
	if g, err := authn.APIKey(ctx, key[1]); err != nil || g.Key.Mode != "search" || g.Key.ExpiresAt != nil {
		t.Fatalf("the second key: %+v %v", g, err)
	}
	if again := f.member.get(connectPage); strings.Contains(again.body, key[1]) || !strings.Contains(again.body, "tgk_...") {
		t.Fatal("the key was shown twice")
	}
	// Another workspace's page does not take it either: it was shown.
	if logs := logsOf(t); strings.Contains(logs, key[1][10:]) {
		t.Fatal("the log holds a key")
	}
}

// snippetsOf reads each snippet's text from the page, by the id its copy
// button copies.
func snippetsOf(t *testing.T, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<pre class="code" id="(snippet-[a-z-]+)-code">(.*?)</pre>`).FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// TestConnectCurlSnippetTalksToTheEndpoint runs the page's curl example with
// bash and curl against the real /mcp: it initializes a session, reads its
// id and lists the tools of search mode.
func TestConnectCurlSnippetTalksToTheEndpoint(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the curl example: %v", tool, err)
		}
	}
	f := newFixture(t)
	res := f.member.post(connectPage, url.Values{"name": {"curl"}, "mode": {"search"}, "expires_in_days": {"30"}}, true)
	code := snippetsOf(t, res.body)["snippet-curl"]
	if res.status != http.StatusOK || code == "" {
		t.Fatalf("create: %d %s", res.status, excerpt(res.body))
	}
	script := strings.ReplaceAll(code, "http://127.0.0.1:8080/mcp", f.srv.URL+"/mcp")
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("curl example: %v\n%s\n%s", err, script, out)
	}
	for _, want := range []string{`"id":2`, `"tools"`, `search_tools`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tools/list answer lacks %s:\n%s", want, out)
		}
	}
}
