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

	"github.com/toolgate/toolgate/internal/testenv"
)

// chromiumPath is Debian's chromium-headless-shell, which .ci/install-deps installs.
const chromiumPath = "/usr/bin/chromium-headless-shell"

// TestBrowserFlows walks the console the way a person does, in a real browser:
// first sign-up, a new workspace (with a validation error first), an
// invitation accepted in a second browser profile, a second organization and
// the organization switcher. Screenshots go to OutputDir/browser, and the
// workspace overview also to static/img/readme/console.png for the README.
func TestBrowserFlows(t *testing.T) {
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatal("chromium-headless-shell not found: run make deps")
	}
	e := newEnv(t, nil)
	shots := filepath.Join(testenv.OutputDir(t), "browser")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// A fresh --user-data-dir is the allocator's default: a temporary folder it removes.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox, // toolgate's tests run as root in CI
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 800),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
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

	// 6. The README's screenshot: the same data every run, the viewport only,
	// no flash, the pointer parked on an empty spot.
	ada.open("/o/acme-robotics/w/data-team")
	ada.wantText(".page-head h1", "Data Team")
	ada.wantNone(testid("flash"))
	ada.do("park the pointer", chromedp.MouseEvent(chromedp.MouseMoved, 1270, 790))
	png := ada.capture("README screenshot", chromedp.CaptureScreenshot())
	ada.save("10-readme-console", png)
	readme := filepath.Join(testenv.RepoRoot(t), "static", "img", "readme")
	if err := os.MkdirAll(readme, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(readme, "console.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}

	ada.checkConsole()
	sam.checkConsole()
}

// testid is the CSS selector of a data-testid.
func testid(id string) string { return `[data-testid="` + id + `"]` }

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
	b.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
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
	b.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
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
