package handlers_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserPolicies walks the policies pages in a real browser: a new
// rule whose condition is checked as it is typed (the error with its line
// and column, then "valid"), the fields that follow the chosen kinds, the
// save, a move up swapped in place, and the simulator explaining a deny
// and an allow. Screenshots go to OutputDir/policies.
func TestBrowserPolicies(t *testing.T) {
	e := newEnv(t, nil)
	e.account("owner@acme.test", "Acme")
	e.join(e.account("member@acme.test", ""), "acme", "member")
	api := tokenClient(t, e, "owner@acme.test")
	_, write, _ := paymentsSource(t, api)
	createPolicy(t, api, wsPolicies, map[string]any{"target_type": "everyone", "selector_type": "all", "effect": "allow",
		"note": "Everything else runs."})
	memberID := e.userID("member@acme.test")
	browserCtx, shots := startBrowser(t, 3*time.Minute, "policies")
	b := newTab(t, browserCtx, e.srv.URL, shots)

	b.signIn("owner@acme.test")
	b.wantPath("/o/acme/w/default")

	// From the sidebar to the page: the organization's rules (none) first.
	b.clickAndLoad(testid("workspace-nav") + ` a[href="/o/acme/w/default/policies"]`)
	b.wantText(".page-head h1", "Policies")
	b.waitText(testid("rules-organization"), "No organization rules.")
	b.waitText(testid("rules-workspace"), "Everything else runs.")
	b.shot("01-list")

	// The editor shows the fields of the kinds chosen.
	b.clickAndLoad(testid("new-rule"))
	b.wantText(".page-head h1", "New rule")
	b.wantNone(`[data-when="target_type=role"]:not([hidden])`)
	b.pick(testid("field-target_type"), "role")
	b.wantVisible(testid("field-target_role"))
	b.pick(testid("field-target_role"), "member")
	b.pick(testid("field-selector_type"), "pattern")
	b.wantVisible(testid("field-selector_pattern"))
	b.wantNone(`[data-when="selector_type=source"]:not([hidden])`)
	b.fill(testid("field-selector_pattern"), "payments.*")

	// The condition is checked as it is typed.
	b.fill(testid("field-condition"), "args.amount >")
	b.waitText(testid("condition-error"), "line 1, column")
	b.wantVisible(testid("condition-caret"))
	b.shot("02-condition-error")
	b.fill(testid("field-condition"), "args.amount > 1000")
	b.waitText(testid("condition-check"), "Condition is valid.")
	b.pick(testid("field-effect"), "deny")
	b.wantNone(`[data-when="effect=require_approval"]:not([hidden])`)
	b.fill(testid("field-note"), "Members never make large charges.")
	b.shot("03-rule-form")
	b.clickAndLoad(testid("save-rule"))
	b.wantPath("/o/acme/w/default/policies")
	b.waitText(testid("flash"), "Rule 2 created")
	b.waitText(testid("rules-workspace")+` tr:nth-child(2) `+testid("rule-selector"), "Pattern payments.*")

	// Moving it up swaps the rules in place, without a reload.
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.toolgateNoReload = true`))
	b.click(testid("rules-workspace") + ` tr:nth-child(2) ` + testid("rule-up"))
	b.waitText(testid("rules-workspace")+` tr:nth-child(1) `+testid("rule-selector"), "Pattern payments.*")
	b.waitText(testid("rules-workspace")+` tr:nth-child(2) `+testid("rule-note"), "Everything else runs.")
	if kept, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.toolgateNoReload === true`)); err != nil || !kept {
		t.Fatalf("moving a rule reloaded the page (%v, %v)", kept, err)
	}
	b.shot("04-moved")

	// The simulator: a member's large charge is denied by the rule, a small one allowed by the next.
	b.pick(testid("field-caller"), "user:"+strconv.FormatInt(memberID, 10))
	b.fill(testid("field-path"), write)
	b.fill(testid("field-arguments"), `{"amount": 5000}`)
	b.click(testid("simulate"))
	b.waitText(testid("sim-effect"), "Deny")
	b.waitText(testid("sim-decider"), "at position 1")
	b.waitText(testid("sim-steps"), "yes")
	b.shot("05-simulated-deny")
	b.fill(testid("field-arguments"), `{"amount": 10}`)
	b.click(testid("simulate"))
	b.waitText(testid("sim-effect"), "Allow")
	b.waitText(testid("sim-decider"), "at position 2")
	b.shot("06-simulated-allow")
	b.fill(testid("field-arguments"), `{"amount": }`)
	b.click(testid("simulate"))
	b.waitText(testid("error-arguments"), "Enter a JSON object: line 1, column")
	b.shot("07-simulator-bad-json")
	b.checkConsole()
}
