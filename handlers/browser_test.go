package handlers_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/internal/testenv"
)

// chromiumPath is Debian's chromium-headless-shell, which .ci/install-deps installs.
const chromiumPath = "/usr/bin/chromium-headless-shell"

// TestBrowserFlows walks the console the way a person does, in a real browser:
// first sign-up, a new workspace (with a validation error first), an
// invitation accepted in a second browser profile, a second organization and
// the organization switcher, then a GraphQL source in Data Team found through
// the catalog's search. Screenshots go to OutputDir/browser, and the Data
// Team dashboard also to static/img/readme/console.png for the README.
func TestBrowserFlows(t *testing.T) {
	e := newEnv(t, nil)
	browserCtx, shots := startBrowser(t, 3*time.Minute, "browser")
	// Two browser contexts are two profiles: separate cookies, separate sessions.
	ada := newTab(t, browserCtx, e.srv.URL, shots)
	sam := newTab(t, browserCtx, e.srv.URL, shots)

	// 1. An empty instance sends the first visitor to set it up.
	ada.open("/")
	ada.wantPath("/signup")
	ada.wantText("h1", "Set up toolgate")
	ada.fill(testid("field-email"), "ada@acme.test")
	ada.fill(testid("field-name"), "Ada Lovelace")
	ada.fill(testid("field-password"), password)
	ada.fill(testid("field-org_name"), "Acme Robotics")
	ada.shot("01-sign-up")
	ada.clickAndLoad(testid("signup-form") + ` button[type="submit"]`)
	ada.wantPath("/o/acme-robotics/w/default")
	ada.wantVisible(testid("workspace-home"))
	ada.wantText(".page-head h1", "Default")
	ada.wantText(testid("flash"), "Welcome to toolgate.")
	ada.shot("02-default-workspace")

	// 2. A workspace from the sidebar's switcher; a bad name is refused in
	// place (htmx swaps the 422 form), then fixed.
	ada.click(testid("workspace-switcher") + " summary")
	ada.clickAndLoad(testid("new-workspace"))
	ada.wantPath("/o/acme-robotics/workspaces/new")
	ada.fill(testid("field-name"), "<bad>")
	ada.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.toolgateNoReload = true`))
	ada.run("submit the bad name", chromedp.WaitEvent(network.ResponseReceived, func(ev network.EventResponseReceived) bool {
		return ev.Response.URL == e.srv.URL+"/o/acme-robotics/workspaces" && ev.Response.Status == 422
	}, chromedp.Click(chromedp.CSS(testid("workspace-form")+` button[type="submit"]`))))
	ada.wantText(testid("error-name"), "Use letters, digits, spaces and - _ . , ' & ( ) only.")
	if kept, err := chromedp.Run(ada.ctx, chromedp.Evaluate[bool](`window.toolgateNoReload === true`)); err != nil || !kept {
		t.Fatalf("the invalid workspace form reloaded the page (marker kept: %v, %v)", kept, err)
	}
	ada.wantPath("/o/acme-robotics/workspaces/new")
	if v := ada.value(testid("field-name")); v != "<bad>" {
		t.Fatalf("the swapped form lost the typed name: %q", v)
	}
	ada.shot("03-workspace-name-error")
	ada.fill(testid("field-name"), "Data Team")
	ada.clickAndLoad(testid("workspace-form") + ` button[type="submit"]`)
	ada.wantPath("/o/acme-robotics/w/data-team")
	ada.wantText(".page-head h1", "Data Team")
	ada.wantText(testid("workspace-switcher")+" summary .value", "Data Team")
	ada.wantText(testid("flash"), "Created workspace Data Team.")
	ada.shot("04-data-team-workspace")

	// 3. An invitation link for sam, shown once on the members page.
	ada.clickAndLoad(testid("org-nav") + ` a[href="/o/acme-robotics/members"]`)
	ada.wantPath("/o/acme-robotics/members")
	ada.fill(testid("field-email"), "sam@acme.test")
	ada.do("choose the member role", chromedp.SetValue(chromedp.CSS(testid("field-role")), "member"))
	ada.clickAndLoad(testid("invite-form") + ` button[type="submit"]`)
	ada.wantPath("/o/acme-robotics/members")
	link := ada.text(testid("invitation-link"))
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Path, "/invitations/") {
		t.Fatalf("invitation link %q: %v", link, err)
	}
	ada.wantVisible(testid("invitations"))
	ada.shot("05-invitation-link")

	// 4. Sam opens the link in another profile, signs up and lands in Acme.
	// The link's host is the configured base URL; the path is what matters.
	sam.open(u.Path)
	sam.wantPath("/signup")
	sam.wantText("h1", "Join Acme Robotics")
	if v := sam.value(testid("field-email")); v != "sam@acme.test" {
		t.Fatalf("invited email not filled in: %q", v)
	}
	sam.wantNone(testid("field-org_name"))
	sam.fill(testid("field-name"), "Sam Carter")
	sam.fill(testid("field-password"), password)
	sam.clickAndLoad(testid("signup-form") + ` button[type="submit"]`)
	sam.wantPath("/o/acme-robotics/w/default")
	sam.wantText(testid("org-switcher")+" summary .value", "Acme Robotics")
	sam.wantNone(testid("new-workspace")) // members do not create workspaces
	sam.shot("06-sam-joined")

	ada.do("reload the members page", chromedp.Reload())
	row := testid("member-sam@acme.test")
	ada.wantText(row+" strong", "Sam Carter")
	if role := ada.value(row + " select"); role != "member" {
		t.Fatalf("sam's role: %q, want member", role)
	}
	ada.wantNone(testid("invitation-link")) // shown once
	ada.wantVisible(testid("no-invitations"))
	ada.shot("07-members")

	// 5. A second organization, then back with the organization switcher.
	ada.click(testid("org-switcher") + " summary")
	ada.clickAndLoad(testid("new-org"))
	ada.wantPath("/orgs/new")
	ada.fill(testid("field-name"), "Globex")
	ada.clickAndLoad(testid("name-form") + ` button[type="submit"]`)
	ada.wantPath("/o/globex/w/default")
	ada.wantText(testid("org-switcher")+" summary .value", "Globex")
	ada.click(testid("org-switcher") + " summary")
	ada.wantVisible(testid("switch-org-acme-robotics"))
	ada.shot("08-org-switcher")
	ada.clickAndLoad(testid("switch-org-acme-robotics"))
	ada.wantPath("/o/acme-robotics/w/default")
	ada.wantText(testid("org-switcher")+" summary .value", "Acme Robotics")
	ada.shot("09-back-in-acme")

	// 6. A GraphQL source from pasted SDL in Data Team: tested in place
	// (htmx), saved, then the state badge polls until the worker is done and
	// the page reloads itself with the tools.
	ada.click(testid("workspace-switcher") + " summary")
	ada.clickAndLoad(testid("switch-ws-data-team"))
	ada.wantPath("/o/acme-robotics/w/data-team")
	ada.clickAndLoad(testid("workspace-nav") + ` a[href="/o/acme-robotics/w/data-team/sources"]`)
	ada.wantPath("/o/acme-robotics/w/data-team/sources")
	ada.clickAndLoad(testid("new-source"))
	ada.wantPath("/o/acme-robotics/w/data-team/sources/new")
	ada.pick(testid("source-form")+` select[name="type"]`, "graphql")
	ada.fill(testid("field-name"), "Library")
	ada.wantVisible(testid("source-form") + ` textarea[name="schema"]`) // its fieldset shows once graphql is picked
	ada.fill(testid("source-form")+` textarea[name="schema"]`, librarySDL)
	ada.click(testid("test-source"))
	ada.waitText(testid("test-ok"), "4 tools")
	ada.wantPath("/o/acme-robotics/w/data-team/sources/new")
	ada.shot("10-source-test")
	ada.clickAndLoad(testid("source-form") + ` button[type="submit"]:not([formaction])`)
	ada.wantPathPrefix("/o/acme-robotics/w/data-team/sources/")
	ada.wantText(".page-head h1", "Library")
	ada.wantVisible(testid("source-state"))
	// The worker may finish before the page loads; if not, the badge polls
	// and the page reloads itself. Either way it ends ready with its tools.
	ada.waitText(testid("source-state"), "ready")
	ada.waitText(testid("tools"), "library.query.book")
	ada.wantText(testid("source-state"), "ready")
	ada.wantText(testid("tool-count"), "4") // the three fields and the generic GraphQL tool (checked below)
	ada.shot("11-source-ready")

	// 7. The catalog searches as one types (debounced htmx), no Enter.
	ada.clickAndLoad(testid("workspace-nav") + ` a[href="/o/acme-robotics/w/data-team/tools"]`)
	ada.wantPath("/o/acme-robotics/w/data-team/tools")
	ada.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.toolgateNoReload = true`))
	ada.fill(testid("catalog-q"), "lend")
	ada.waitText(testid("hit"), "library.mutation.lendBook")
	if kept, err := chromedp.Run(ada.ctx, chromedp.Evaluate[bool](`window.toolgateNoReload === true`)); err != nil || !kept {
		t.Fatalf("the catalog search reloaded the page (marker kept: %v, %v)", kept, err)
	}
	ada.shot("12-catalog-search")
	ada.clickAndLoad(testid("hit"))
	ada.wantText(testid("tool-path"), "library.mutation.lendBook")
	ada.wantVisible(testid("schema-inputs"))
	ada.wantVisible(testid("example-call"))
	ada.shot("13-tool-page")

	// 8. The README's screenshot: the Data Team dashboard with the Library
	// source, the same data every run (the refresh time is pinned), the
	// viewport only, no flash, the pointer parked on an empty spot.
	pinRefreshTimes(t, e)
	ada.open("/o/acme-robotics/w/data-team")
	ada.wantText(".page-head h1", "Data Team")
	ada.waitText(testid("registry"), "ready")
	ada.wantNone(testid("flash"))
	ada.do("park the pointer", chromedp.MouseEvent(chromedp.MouseMoved, 1270, 790))
	png := ada.capture("README screenshot", chromedp.CaptureScreenshot())
	ada.save("14-readme-console", png)
	readme := filepath.Join(testenv.RepoRoot(t), "static", "img", "readme")
	if err := os.MkdirAll(readme, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(readme, "console.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}

	// 9. Ada, signed in on a second computer too, signs out of every other
	// session from her account settings; the other computer is signed out.
	laptop := newTab(t, browserCtx, e.srv.URL, shots)
	laptop.signIn("ada@acme.test")
	laptop.wantPath("/o/acme-robotics/w/default")
	ada.open("/settings/profile")
	ada.clickAndLoad(testid("sign-out-others") + ` button[type="submit"]`)
	ada.wantPath("/settings/profile")
	ada.wantText(testid("flash"), "Signed out of every other session.")
	ada.shot("15-account-sessions")
	laptop.open("/o/acme-robotics/w/default")
	laptop.wantPath("/signin")

	ada.checkConsole()
	sam.checkConsole()
	laptop.checkConsole()
}

// librarySDL is the schema pasted into the new GraphQL source: two queries
// and a mutation, each described.
const librarySDL = `type Query { "Look up a book by its title." book(title: String!): String  "List the newest books." books(first: Int): [String] }  type Mutation { "Lend a book to a reader." lendBook(title: String!, reader: String!): Boolean }`

// pinRefreshTimes sets every source's refresh time to a fixed instant, so
// that screenshots showing it are the same every run. SDL sources are never
// due for a periodic refresh, so the worker leaves the times alone.
func pinRefreshTimes(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	err := e.store.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE sources SET last_refreshed_at = '2025-06-02 09:41:00+00', last_success_at = '2025-06-02 09:41:00+00'`)
		return err
	})
	if err != nil {
		t.Fatalf("pin the refresh times: %v", err)
	}
}

// testid is the CSS selector of a data-testid.
func testid(id string) string { return `[data-testid="` + id + `"]` }

// startBrowser starts chromium-headless-shell for a test that ends within
// limit, and returns the browser's context, in which newTab opens tabs.
// Screenshots of its tabs go to OutputDir/shotsDir.
func startBrowser(t *testing.T, limit time.Duration, shotsDir string) (browserCtx context.Context, shots string) {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatal("chromium-headless-shell not found: run make deps")
	}
	shots = filepath.Join(testenv.OutputDir(t), shotsDir)
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox, // toolgate's tests run as root in CI
		chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	return browserCtx, shots
}

// tab is one browser tab in its own browser context (its own cookies).
type tab struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

func newTab(t *testing.T, browserCtx context.Context, base, shots string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	b := &tab{t: t, ctx: ctx, base: base, shots: shots}
	b.do("set the viewport", chromedp.EmulateViewport(1280, 800))
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// do runs actions, failing the test with what on error.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

// run runs an action whose value does not matter.
func (b *tab) run(what string, action chromedp.Action[network.EventResponseReceived]) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, action); err != nil {
		b.fail(what, err)
	}
}

func (b *tab) fail(what string, err error) {
	b.t.Helper()
	where, _ := chromedp.Run(context.WithoutCancel(b.ctx), chromedp.Location())
	if errors.Is(err, context.DeadlineExceeded) {
		b.t.Fatalf("%s: timed out (page %s)", what, where)
	}
	b.t.Fatalf("%s: %v (page %s)", what, err, where)
}

// visibleLimit bounds a wait for an element, so a page that never shows
// it fails the test with its name, not at the browser's whole limit.
const visibleLimit = 2 * time.Minute

// waitVisible waits until the element is on the page and visible.
func (b *tab) waitVisible(sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, visibleLimit)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		b.fail("wait "+visibleLimit.String()+" for "+sel, err)
	}
}

// signIn signs the tab's browser in as email through the sign-in form.
func (b *tab) signIn(email string) {
	b.t.Helper()
	b.open("/signin")
	b.fill(testid("field-email"), email)
	b.fill(testid("field-password"), password)
	b.clickAndLoad(testid("signin-form") + ` button[type="submit"]`)
}

func (b *tab) open(path string) { b.t.Helper(); b.do("open "+path, chromedp.Navigate(b.base+path)) }

// click clicks a visible element that does not leave the page.
func (b *tab) click(sel string) { b.t.Helper(); b.do("click "+sel, chromedp.Click(chromedp.CSS(sel))) }

// clickAndLoad clicks and waits for the page it leads to, including htmx's
// HX-Redirect.
func (b *tab) clickAndLoad(sel string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel))))
	if err != nil {
		b.fail("click "+sel+" and wait for the next page", err)
	}
}

// fill replaces a field's value by typing, as a person does.
func (b *tab) fill(sel, value string) {
	b.t.Helper()
	// SetValue(sel, "") fails in chromedp v0.23.0 (the empty argument arrives
	// as undefined), so the field is emptied by script before typing.
	b.do("fill "+sel,
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+jsString(sel)+`).value = ''`),
		chromedp.SendKeys(chromedp.CSS(sel), value))
}

func (b *tab) text(sel string) string {
	b.t.Helper()
	b.waitVisible(sel)
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.fail("read "+sel, err)
	}
	return strings.TrimSpace(s)
}

func (b *tab) value(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.fail("read the value of "+sel, err)
	}
	return s
}

func (b *tab) wantVisible(sel string) {
	b.t.Helper()
	b.waitVisible(sel)
}

func (b *tab) wantText(sel, want string) {
	b.t.Helper()
	if got := b.text(sel); got != want {
		b.t.Fatalf("%s: text %q, want %q", sel, got, want)
	}
}

// wantNone checks that the loaded page has no such element; it does not wait.
func (b *tab) wantNone(sel string) {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
	if err != nil {
		b.fail("count "+sel, err)
	}
	if n != 0 {
		b.t.Fatalf("%s: %d on the page, want none", sel, n)
	}
}

// pick chooses an option of a select and fires change, as a person does.
func (b *tab) pick(sel, value string) {
	b.t.Helper()
	// The value is read back in the same script that sets it: the change
	// event may make htmx swap the select out before a second round trip.
	b.waitVisible(sel)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(function (s) { s.value = `+jsString(value)+`; var v = s.value; s.dispatchEvent(new Event('input', {bubbles: true})); s.dispatchEvent(new Event('change', {bubbles: true})); return v })(document.querySelector(`+jsString(sel)+`))`))
	if err != nil {
		b.fail("pick "+value+" in "+sel, err)
	}
	if got != value {
		b.t.Fatalf("%s: value %q after picking %q", sel, got, value)
	}
}

// waitText waits until an element's text contains want. It keeps asking
// across page loads (htmx swaps, HX-Refresh reloads), unlike chromedp.Poll.
func (b *tab) waitText(sel, want string) {
	b.t.Helper()
	const timeout = 45 * time.Second
	js := `(function () { var e = document.querySelector(` + jsString(sel) + `); return e ? e.textContent : null })()`
	deadline := time.Now().Add(timeout)
	last := "(no such element)"
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[*string](js))
		cancel()
		if err == nil && got != nil {
			last = strings.Join(strings.Fields(*got), " ")
			if strings.Contains(last, want) {
				return
			}
		}
		if b.ctx.Err() != nil || time.Now().After(deadline) {
			where, _ := chromedp.Run(context.WithoutCancel(b.ctx), chromedp.Location())
			b.t.Fatalf("%s: waited %s for %q, text %q (page %s, last error %v)", sel, timeout, want, last, where, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *tab) wantPathPrefix(prefix string) {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.fail("read the location", err)
	}
	u, err := url.Parse(loc)
	if err != nil || !strings.HasPrefix(u.Path, prefix) {
		b.t.Fatalf("at %s, want a path under %s", loc, prefix)
	}
}

func (b *tab) wantPath(want string) {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.fail("read the location", err)
	}
	u, err := url.Parse(loc)
	if err != nil || u.Path != want {
		b.t.Fatalf("at %s, want path %s", loc, want)
	}
}

// shot saves a full-page PNG as NN-name.png.
func (b *tab) shot(name string) {
	b.t.Helper()
	b.save(name, b.capture("screenshot "+name, chromedp.FullScreenshot(100)))
}

func (b *tab) capture(what string, action chromedp.Action[[]byte]) []byte {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, action)
	if err != nil {
		b.fail(what, err)
	}
	return png
}

func (b *tab) save(name string, png []byte) {
	b.t.Helper()
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// checkConsole logs what the pages wrote to the console and fails on
// uncaught exceptions and errors, such as a blocked script or a missing asset.
// The one expected error is the 422 of the invalid workspace form.
func (b *tab) checkConsole() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		b.t.Logf("console %s: %s (%s)", m.Type, m.Text, m.URL)
		expected := strings.HasPrefix(m.Text, "Failed to load resource") && strings.Contains(m.Text, "422")
		if m.IsException() || m.Type == chromedp.ConsoleError && !expected {
			b.t.Errorf("browser console %s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1)
		}
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`)
	return `'` + r.Replace(s) + `'`
}
