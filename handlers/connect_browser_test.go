package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserConnectAndTryIt walks "Connect an agent" and "Try it" in a real
// browser: from the sidebar to the connect page, the mode switch swapped in
// place, a key created and filled into the snippets; then a tool page where
// bad JSON is refused under the field and a call answers in place.
// Screenshots go to OutputDir/browser-connect.
func TestBrowserConnectAndTryIt(t *testing.T) {
	e := newEnv(t, peerVars)
	e.account("owner@acme.test", "Acme")
	pets := newPetsUpstream(t)
	createSource(t, tokenClient(t, e, "owner@acme.test"), wsSources, map[string]any{"name": "Pets", "type": "openapi",
		"config": map[string]any{"spec": json.RawMessage(fmt.Sprintf(petsSpec, pets.URL))}}, http.StatusCreated)
	browserCtx, shots := startBrowser(t, 3*time.Minute, "browser-connect")
	b := newTab(t, browserCtx, e.srv.URL, shots)

	b.signIn("owner@acme.test")
	b.wantPath("/o/acme/w/default")

	// The sidebar leads to the page; the mode switch swaps the body in place.
	b.clickAndLoad(testid("workspace-nav") + ` a[href="/o/acme/w/default/connect"]`)
	b.wantText(".page-head h1", "Connect an agent")
	b.wantText(testid("mcp-url"), "http://127.0.0.1:8080/mcp")
	b.shot("01-connect")
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.toolgateNoReload = true`))
	b.click(testid("mode-direct"))
	b.waitText(testid("mcp-url"), "http://127.0.0.1:8080/mcp?mode=direct")
	b.waitText(testid("snippet-vscode"), `"url": "http://127.0.0.1:8080/mcp?mode=direct"`)
	b.wantPath("/o/acme/w/default/connect")
	if kept, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.toolgateNoReload === true && location.search === "?mode=direct"`)); err != nil || !kept {
		t.Fatalf("the mode switch reloaded the page or did not push its URL (%v, %v)", kept, err)
	}

	// A key, created in place, fills every snippet.
	b.fill(testid("field-name"), "laptop")
	b.click(testid("connect-create-key"))
	b.wantVisible(testid("connect-key-value"))
	key := b.text(testid("connect-key-value"))
	if !strings.HasPrefix(key, "tgk_") {
		t.Fatalf("created key %q", key)
	}
	b.waitText(testid("snippet-claude-code"), `--header "Authorization: Bearer `+key+`"`)
	b.waitText(testid("snippet-cursor"), `"Authorization": "Bearer `+key+`"`)
	b.shot("02-connect-key")

	// Try it: bad JSON under the field, then a call answered in place.
	b.open("/o/acme/w/default/tools/pets.get_pet")
	b.wantVisible(testid("try-it-form"))
	b.fill(testid("try-arguments"), `{"id": 1,}`)
	b.click(testid("try-run"))
	b.waitText(testid("try-problems"), "Not valid JSON at line 1, column 10")
	b.shot("03-try-it-bad-json")
	b.fill(testid("try-arguments"), `{"id": "5"}`)
	b.click(testid("try-run"))
	b.waitText(testid("try-outcome"), "ok")
	b.waitText(testid("try-json"), `"name": "Rex"`)
	b.shot("04-try-it-answer")
	b.checkConsole()
}
