package policy

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ruleOpt adjusts a test rule.
type ruleOpt func(*Rule)

// rule is an enabled rule for everyone and all tools, adjusted by opts.
func rule(id int64, level Level, pos int, e Effect, opts ...ruleOpt) Rule {
	r := Rule{ID: id, Level: level, Position: pos, Effect: e, Target: TargetEveryone, Selector: SelectAll, Enabled: true}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func org(id int64, pos int, e Effect, opts ...ruleOpt) Rule {
	return rule(id, LevelOrganization, pos, e, opts...)
}

func ws(id int64, pos int, e Effect, opts ...ruleOpt) Rule {
	return rule(id, LevelWorkspace, pos, e, opts...)
}

func sel(s SelectorType, v string) ruleOpt { return func(r *Rule) { r.Selector, r.Value = s, v } }
func cond(c string) ruleOpt                { return func(r *Rule) { r.Condition = c } }
func role(x string) ruleOpt                { return func(r *Rule) { r.Target, r.Role = TargetRole, x } }
func user(id int64) ruleOpt                { return func(r *Rule) { r.Target, r.UserID = TargetUser, id } }
func key(id int64) ruleOpt                 { return func(r *Rule) { r.Target, r.KeyID = TargetKey, id } }
func disabled() ruleOpt                    { return func(r *Rule) { r.Enabled = false } }

var (
	testNow = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	// ghDelete is an OpenAPI DELETE whose default requires approval.
	ghDelete = Tool{Path: "github.repos.delete", Namespace: "github", SourceID: "src_gh", Source: "GitHub",
		Type: "openapi", Method: "DELETE", DefaultApproval: "required"}
	// ghGet is an OpenAPI GET whose default is auto.
	ghGet = Tool{Path: "github.repos.get", Namespace: "github", SourceID: "src_gh", Source: "GitHub",
		Type: "openapi", Method: "GET", DefaultApproval: "auto"}
	// stripeCharge is a Stripe POST whose default requires approval.
	stripeCharge = Tool{Path: "stripe.charges.create", Namespace: "stripe", SourceID: "src_st", Source: "Stripe",
		Type: "openapi", Method: "POST", DefaultApproval: "required"}
	// member uses an API key; admin uses the console.
	member = Caller{UserID: 7, UserEmail: "mia@example.com", Role: "member", KeyID: 3, KeyName: "ci"}
	admin  = Caller{UserID: 1, UserEmail: "ada@example.com", Role: "admin"}
)

type decideCase struct {
	name     string
	rules    []Rule
	tool     Tool
	caller   Caller
	args     map[string]any
	want     Effect
	wantRule int64 // 0: the default decided
	// wantLevel defaults to the deciding rule's level, or LevelDefault.
	wantLevel Level
	// wantReason, if set, must be the Reason exactly.
	wantReason string
	// wantSteps, if set, lists the rule ids considered and which matched
	// (negative id: considered and did not match).
	wantSteps []int64
	// wantWhy, if set, must appear in the deciding step's Why.
	wantWhy string
}

func runDecide(t *testing.T, tests []decideCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Compile(tt.rules).Decide(tt.tool, tt.caller, tt.args, testNow)
			if d.Effect != tt.want {
				t.Errorf("Effect = %s, want %s (%s)", d.Effect, tt.want, d.Reason)
			}
			var gotRule int64
			if d.Rule != nil {
				gotRule = d.Rule.ID
			}
			if gotRule != tt.wantRule {
				t.Errorf("Rule = #%d, want #%d (%s)", gotRule, tt.wantRule, d.Reason)
			}
			wantLevel := tt.wantLevel
			if wantLevel == "" {
				wantLevel = LevelDefault
				for _, r := range tt.rules {
					if r.ID == tt.wantRule && tt.wantRule != 0 {
						wantLevel = r.Level
					}
				}
			}
			if d.Level != wantLevel {
				t.Errorf("Level = %s, want %s", d.Level, wantLevel)
			}
			if tt.wantReason != "" && d.Reason != tt.wantReason {
				t.Errorf("Reason = %q\nwant     %q", d.Reason, tt.wantReason)
			}
			if tt.wantSteps != nil {
				got := []int64{}
				for _, s := range d.Steps {
					if s.Matched {
						got = append(got, s.RuleID)
					} else {
						got = append(got, -s.RuleID)
					}
				}
				if diff := cmp.Diff(tt.wantSteps, got); diff != "" {
					t.Errorf("Steps (-want +got):\n%s\n%+v", diff, d.Steps)
				}
			}
			if tt.wantWhy != "" {
				found := false
				for _, s := range d.Steps {
					if strings.Contains(s.Why, tt.wantWhy) {
						found = true
					}
				}
				if !found {
					t.Errorf("no step says %q: %+v", tt.wantWhy, d.Steps)
				}
			}
		})
	}
}

func TestDecideOrdering(t *testing.T) {
	runDecide(t, []decideCase{
		{name: "lowest position first", rules: []Rule{org(1, 2, Deny), org(2, 1, Allow)},
			tool: ghDelete, caller: member, want: Allow, wantRule: 2, wantSteps: []int64{2}},
		{name: "a later, stricter rule does not count", rules: []Rule{
			org(1, 1, Allow), org(2, 2, Deny, sel(SelectPattern, "github.**"))},
			tool: ghDelete, caller: member, want: Allow, wantRule: 1, wantSteps: []int64{1}},
		{name: "same position: lower id first", rules: []Rule{org(9, 1, Deny), org(4, 1, RequireApproval)},
			tool: ghGet, caller: member, want: RequireApproval, wantRule: 4, wantSteps: []int64{4}},
		{name: "negative positions sort first", rules: []Rule{org(1, 0, Allow), org(2, -5, Deny)},
			tool: ghGet, caller: member, want: Deny, wantRule: 2},
		{name: "non-matching rules are skipped in order", rules: []Rule{
			org(1, 1, Deny, sel(SelectNamespace, "stripe")),
			org(2, 2, Allow, role("admin")),
			org(3, 3, RequireApproval, sel(SelectPattern, "github.repos.*")),
			org(4, 4, Deny)},
			tool: ghGet, caller: member, want: RequireApproval, wantRule: 3, wantSteps: []int64{-1, -2, 3}},
		{name: "disabled rules are left out", rules: []Rule{org(1, 1, Deny, disabled()), org(2, 2, Allow)},
			tool: ghDelete, caller: member, want: Allow, wantRule: 2, wantSteps: []int64{2}},
		{name: "only disabled rules: the default", rules: []Rule{org(1, 1, Deny, disabled()), ws(2, 1, Deny, disabled())},
			tool: ghGet, caller: member, want: Allow, wantSteps: []int64{}},
	})
}

func TestDecideLevels(t *testing.T) {
	runDecide(t, []decideCase{
		{name: "workspace deny is stricter than org allow", rules: []Rule{org(1, 1, Allow), ws(2, 1, Deny)},
			tool: ghGet, caller: member, want: Deny, wantRule: 2, wantSteps: []int64{1, 2},
			wantReason: "Rule #2 of the workspace (deny all tools) matched; it is stricter than the organization's " +
				"rule #1 (allow all tools)."},
		{name: "workspace cannot loosen org deny", rules: []Rule{org(1, 1, Deny, sel(SelectNamespace, "github")), ws(2, 1, Allow)},
			tool: ghGet, caller: member, want: Deny, wantRule: 1,
			wantReason: "Rule #1 of the organization (deny namespace github) matched; the workspace's rule #2 " +
				"(allow all tools) cannot loosen it."},
		{name: "workspace cannot loosen org require_approval", rules: []Rule{org(1, 1, RequireApproval), ws(2, 1, Allow)},
			tool: ghGet, caller: member, want: RequireApproval, wantRule: 1},
		{name: "workspace deny over org require_approval", rules: []Rule{org(1, 1, RequireApproval), ws(2, 1, Deny)},
			tool: ghGet, caller: member, want: Deny, wantRule: 2},
		{name: "equal effects: the org rule is reported", rules: []Rule{org(1, 1, Allow), ws(2, 1, Allow)},
			tool: ghGet, caller: member, want: Allow, wantRule: 1,
			wantReason: "Rule #1 of the organization (allow all tools) matched; the workspace's rule #2 " +
				"(allow all tools) agrees."},
		{name: "workspace decides when the org has no match, even looser than the default",
			rules: []Rule{org(1, 1, Deny, sel(SelectNamespace, "stripe")), ws(2, 1, Allow, sel(SelectSource, "src_gh"))},
			tool:  ghDelete, caller: member, want: Allow, wantRule: 2, wantSteps: []int64{-1, 2},
			wantReason: "Rule #2 of the workspace (allow source src_gh) matched."},
		{name: "org first match then workspace first match",
			rules: []Rule{
				org(1, 1, RequireApproval, sel(SelectPattern, "github.**")), org(2, 2, Deny),
				ws(3, 1, Allow, role("admin")), ws(4, 2, Deny, sel(SelectPattern, "github.repos.delete")), ws(5, 3, Deny)},
			tool: ghDelete, caller: member, want: Deny, wantRule: 4, wantSteps: []int64{1, -3, 4}},
		{name: "neither level matches", rules: []Rule{org(1, 1, Deny, role("viewer")), ws(2, 1, Deny, role("viewer"))},
			tool: ghDelete, caller: member, want: RequireApproval, wantSteps: []int64{-1, -2},
			wantReason: "No rule matched; the tool's default is to require approval."},
		{name: "a rule with no level binds like an org rule", rules: []Rule{rule(1, "", 1, Deny), ws(2, 1, Allow)},
			tool: ghGet, caller: member, want: Deny, wantRule: 1, wantLevel: LevelOrganization},
	})
}

func TestDecideTargets(t *testing.T) {
	runDecide(t, []decideCase{
		{name: "everyone", rules: []Rule{org(1, 1, Deny)}, tool: ghGet, caller: admin, want: Deny, wantRule: 1},
		{name: "role matches", rules: []Rule{org(1, 1, Deny, role("member"))}, tool: ghGet, caller: member, want: Deny, wantRule: 1},
		{name: "role differs", rules: []Rule{org(1, 1, Deny, role("member"))}, tool: ghGet, caller: admin, want: Allow,
			wantWhy: "targets role member, not this caller"},
		{name: "user matches", rules: []Rule{org(1, 1, Deny, user(7))}, tool: ghGet, caller: member, want: Deny, wantRule: 1},
		{name: "user differs", rules: []Rule{org(1, 1, Deny, user(7))}, tool: ghGet, caller: admin, want: Allow,
			wantWhy: "targets user #7, not this caller"},
		{name: "key matches", rules: []Rule{org(1, 1, Deny, key(3))}, tool: ghGet, caller: member, want: Deny, wantRule: 1},
		{name: "key differs", rules: []Rule{org(1, 1, Deny, key(4))}, tool: ghGet, caller: member, want: Allow,
			wantWhy: "targets API key #4, not this caller"},
		{name: "a key rule never matches the console", rules: []Rule{org(1, 1, Deny, key(3))},
			tool: ghGet, caller: Caller{UserID: 7, Role: "member"}, want: Allow},
	})
}

func TestDecideSelectors(t *testing.T) {
	runDecide(t, []decideCase{
		{name: "all", rules: []Rule{org(1, 1, Deny)}, tool: stripeCharge, caller: member, want: Deny, wantRule: 1},
		{name: "source matches", rules: []Rule{org(1, 1, Deny, sel(SelectSource, "src_st"))},
			tool: stripeCharge, caller: member, want: Deny, wantRule: 1},
		{name: "source differs", rules: []Rule{org(1, 1, Deny, sel(SelectSource, "src_st"))},
			tool: ghGet, caller: member, want: Allow, wantWhy: "selects source src_st, not this tool"},
		{name: "namespace matches", rules: []Rule{org(1, 1, Deny, sel(SelectNamespace, "stripe"))},
			tool: stripeCharge, caller: member, want: Deny, wantRule: 1},
		{name: "namespace differs", rules: []Rule{org(1, 1, Deny, sel(SelectNamespace, "stripe"))},
			tool: ghGet, caller: member, want: Allow, wantWhy: "selects namespace stripe, not this tool"},
		{name: "pattern **", rules: []Rule{org(1, 1, Allow, sel(SelectPattern, "stripe.**"))},
			tool: stripeCharge, caller: member, want: Allow, wantRule: 1},
		{name: "pattern *", rules: []Rule{org(1, 1, Deny, sel(SelectPattern, "github.repos.*"))},
			tool: ghDelete, caller: member, want: Deny, wantRule: 1},
		{name: "pattern * is one segment", rules: []Rule{org(1, 1, Deny, sel(SelectPattern, "github.*"))},
			tool: ghDelete, caller: member, want: RequireApproval, wantWhy: "selects github.*, not this tool"},
		{name: "pattern literal", rules: []Rule{org(1, 1, Deny, sel(SelectPattern, "github.repos.get"))},
			tool: ghGet, caller: member, want: Deny, wantRule: 1},
	})
}

func TestDecideConditions(t *testing.T) {
	big := map[string]any{"amount": 150.0}
	small := map[string]any{"amount": 50.0}
	runDecide(t, []decideCase{
		{name: "args above the threshold", rules: []Rule{org(12, 1, RequireApproval, sel(SelectPattern, "stripe.**"), cond("args.amount > 100"))},
			tool:   Tool{Path: "stripe.refunds.create", Namespace: "stripe", Method: "POST", DefaultApproval: "auto"},
			caller: member, args: big, want: RequireApproval, wantRule: 12,
			wantReason: "Rule #12 of the organization (require approval for stripe.**) matched: args.amount > 100."},
		{name: "args below the threshold", rules: []Rule{org(12, 1, RequireApproval, sel(SelectPattern, "stripe.**"), cond("args.amount > 100"))},
			tool:   Tool{Path: "stripe.refunds.create", Namespace: "stripe", Method: "POST", DefaultApproval: "auto"},
			caller: member, args: small, want: Allow, wantSteps: []int64{-12}, wantWhy: "condition is false"},
		{name: "tool method", rules: []Rule{org(1, 1, RequireApproval, cond(`tool.method != "GET"`))},
			tool: ghDelete, caller: member, want: RequireApproval, wantRule: 1},
		{name: "tool method GET", rules: []Rule{org(1, 1, RequireApproval, cond(`tool.method != "GET"`))},
			tool: ghGet, caller: member, want: Allow},
		{name: "caller", rules: []Rule{org(1, 1, Deny, cond(`caller.key != "" && caller.role == "member"`))},
			tool: ghGet, caller: member, want: Deny, wantRule: 1},
		{name: "caller on the console", rules: []Rule{org(1, 1, Deny, cond(`caller.key != "" && caller.role == "member"`))},
			tool: ghGet, caller: Caller{UserID: 7, Role: "member"}, want: Allow},
		{name: "now", rules: []Rule{org(1, 1, Deny, cond("now.getHours() < 9 || now.getHours() >= 17"))},
			tool: ghGet, caller: member, want: Allow},
		{name: "now in office hours", rules: []Rule{org(1, 1, Deny, cond("now.getHours() >= 9 && now.getHours() < 17"))},
			tool: ghGet, caller: member, want: Deny, wantRule: 1},
		{name: "the workspace tightens by argument", rules: []Rule{org(1, 1, Allow, sel(SelectNamespace, "stripe")),
			ws(2, 1, Deny, cond("args.amount > 100"))},
			tool: stripeCharge, caller: member, args: big, want: Deny, wantRule: 2},
		{name: "runtime error fails closed: deny matches", rules: []Rule{org(1, 1, Deny, cond("args.amount > 100")), org(2, 2, Allow)},
			tool: stripeCharge, caller: member, args: map[string]any{}, want: Deny, wantRule: 1, wantSteps: []int64{1},
			wantWhy:    "the condition failed (no such key: amount); it fails closed, so this deny rule matches",
			wantReason: "Rule #1 of the organization (deny all tools) matched because its condition failed at run time, which fails closed."},
		{name: "runtime error fails closed: allow does not match", rules: []Rule{org(1, 1, Allow, cond("args.amount < 100")), org(2, 2, RequireApproval)},
			tool: ghGet, caller: member, args: map[string]any{"amount": "ten"}, want: RequireApproval, wantRule: 2,
			wantSteps: []int64{-1, 2}, wantWhy: "it fails closed, so this allow rule does not match"},
		{name: "cost limit fails closed", rules: []Rule{org(1, 1, RequireApproval, cond("args.l.all(a, args.l.all(b, a == b || true))"))},
			tool: ghGet, caller: member, args: map[string]any{"l": make([]any, 2000)}, want: RequireApproval, wantRule: 1,
			wantWhy: "cost limit exceeded"},
	})
}

// ReadsArgs is true exactly when an enabled rule's condition reads args,
// the one case where the gateway must hand Decide the call's arguments.
func TestReadsArgs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []Rule
		want  bool
	}{
		{"no rules", nil, false},
		{"no condition", []Rule{org(1, 1, Allow)}, false},
		{"conditions on the tool and caller", []Rule{org(1, 1, Deny, cond(`tool.method != "GET"`)), ws(2, 1, Deny, cond(`caller.role == "viewer"`))}, false},
		{"a condition on args", []Rule{org(1, 1, Allow), ws(2, 1, Deny, cond("args.amount > 100"))}, true},
		{"args as a whole", []Rule{org(1, 1, Deny, cond(`size(args) > 3`))}, true},
		{"args in a macro", []Rule{org(1, 1, Deny, cond(`tool.method == "GET" && [1, 2].exists(x, x == args.n)`))}, true},
		{"has(args.x)", []Rule{org(1, 1, Deny, cond(`has(args.x)`))}, true},
		{"disabled", []Rule{org(1, 1, Deny, cond("args.amount > 100"), disabled())}, false},
		{"broken condition", []Rule{org(1, 1, Deny, cond("args.amount >"))}, false},
	} {
		if got := Compile(tc.rules).ReadsArgs(); got != tc.want {
			t.Errorf("%s: ReadsArgs %v, want %v", tc.name, got, tc.want)
		}
	}
	if (*Set)(nil).ReadsArgs() {
		t.Error("a nil set reads args")
	}
}

func TestDecideBrokenRules(t *testing.T) {
	runDecide(t, []decideCase{
		{name: "a condition that no longer compiles: deny matches", rules: []Rule{org(1, 1, Deny, cond("args.amount >")), org(2, 2, Allow)},
			tool: ghGet, caller: member, want: Deny, wantRule: 1,
			wantWhy: "its condition does not compile (line 1, column 14: Syntax error"},
		{name: "a condition that no longer compiles: allow does not match", rules: []Rule{org(1, 1, Allow, cond("tool.methd == 'GET'"))},
			tool: ghDelete, caller: member, want: RequireApproval,
			wantWhy: `its condition does not compile (line 1, column 6: tool has no key "methd"; its keys are path, namespace, source, source_id, type, method, annotations); it fails closed, so this allow rule does not match`},
		{name: "a broken condition still needs its target", rules: []Rule{org(1, 1, Deny, role("viewer"), cond("1 +"))},
			tool: ghGet, caller: member, want: Allow},
		{name: "an invalid pattern fails closed", rules: []Rule{org(1, 1, RequireApproval, sel(SelectPattern, "stripe..x"))},
			tool: ghGet, caller: member, want: RequireApproval, wantRule: 1, wantWhy: "its pattern is invalid (segment 2 is empty"},
		{name: "an unknown selector fails closed", rules: []Rule{org(1, 1, Deny, sel("tag", "x"))},
			tool: ghGet, caller: member, want: Deny, wantRule: 1, wantWhy: `its selector "tag" is unknown`},
		{name: "an unknown target with allow does not match", rules: []Rule{org(1, 1, Allow, func(r *Rule) { r.Target = "team" })},
			tool: ghDelete, caller: member, want: RequireApproval},
		{name: "a role rule without a role fails closed", rules: []Rule{org(1, 1, Deny, role(""))},
			tool: ghGet, caller: member, want: Deny, wantRule: 1, wantWhy: "it targets a role but names none"},
		{name: "an unknown effect counts as deny", rules: []Rule{org(1, 1, "block", sel(SelectNamespace, "github"))},
			tool: ghGet, caller: member, want: Deny, wantRule: 1, wantWhy: `its effect "block" is not allow, require_approval or deny`},
	})
}

func TestDecideDefaults(t *testing.T) {
	tool := func(typ, method, def, override string) Tool {
		return Tool{Path: "x.y", Namespace: "x", Type: typ, Method: method, DefaultApproval: def, ApprovalOverride: override}
	}
	runDecide(t, []decideCase{
		{name: "OpenAPI GET is auto", tool: tool("openapi", "GET", "auto", ""), want: Allow,
			wantReason: "No rule matched; the tool's default is to allow it."},
		{name: "OpenAPI POST requires approval", tool: tool("openapi", "POST", "required", ""), want: RequireApproval},
		{name: "GraphQL query is auto", tool: tool("graphql", "POST", "auto", ""), want: Allow},
		{name: "GraphQL mutation requires approval", tool: tool("graphql", "POST", "required", ""), want: RequireApproval},
		{name: "MCP read-only is auto", tool: tool("mcp", "", "auto", ""), want: Allow},
		{name: "MCP destructive requires approval", tool: tool("mcp", "", "required", ""), want: RequireApproval},
		{name: "the source overrides to auto", tool: tool("openapi", "DELETE", "required", "auto"), want: Allow,
			wantReason: "No rule matched; the tool's default is to allow it (its source overrides it)."},
		{name: "the source overrides to required", tool: tool("mcp", "", "auto", "required"), want: RequireApproval,
			wantReason: "No rule matched; the tool's default is to require approval (its source overrides it)."},
		{name: "an empty default fails closed", tool: tool("mcp", "", "", ""), want: RequireApproval,
			wantReason: `No rule matched; the tool's default is to require approval, since its default approval "" is not auto or required and so fails closed.`},
		{name: "an unknown override fails closed", tool: tool("mcp", "", "auto", "sometimes"), want: RequireApproval,
			wantReason: `No rule matched; the tool's default is to require approval, since its source's override "sometimes" is not auto or required and so fails closed.`},
		{name: "rules that do not match leave the default", rules: []Rule{org(1, 1, Deny, sel(SelectNamespace, "other"))},
			tool: tool("openapi", "GET", "auto", ""), want: Allow, wantSteps: []int64{-1}},
	})
}

func TestDefaultEffect(t *testing.T) {
	tests := []struct {
		def, override string
		want          Effect
	}{
		{"auto", "", Allow},
		{"required", "", RequireApproval},
		{"", "", RequireApproval},
		{"bogus", "", RequireApproval},
		{"required", "auto", Allow},
		{"auto", "required", RequireApproval},
		{"auto", "bogus", RequireApproval},
	}
	for _, tt := range tests {
		if got := DefaultEffect(Tool{DefaultApproval: tt.def, ApprovalOverride: tt.override}); got != tt.want {
			t.Errorf("DefaultEffect(default %q, override %q) = %s, want %s", tt.def, tt.override, got, tt.want)
		}
	}
}

func TestDecideSteps(t *testing.T) {
	rules := []Rule{
		org(1, 1, Deny, role("viewer")),
		org(2, 2, Deny, sel(SelectNamespace, "stripe")),
		org(3, 3, RequireApproval, cond("args.amount > 100")),
		org(4, 4, Allow, sel(SelectPattern, "github.**")),
		org(5, 5, Deny),
		ws(6, 1, Deny, disabled()),
		ws(7, 2, Deny, cond(`tool.method == "DELETE"`)),
		ws(8, 3, RequireApproval),
	}
	d := Compile(rules).Decide(ghGet, member, map[string]any{"amount": 5.0}, testNow)
	want := Decision{
		Effect: RequireApproval,
		Level:  LevelWorkspace,
		Reason: "Rule #8 of the workspace (require approval for all tools) matched; it is stricter than the " +
			"organization's rule #4 (allow github.**).",
		Steps: []Step{
			{RuleID: 1, Level: LevelOrganization, Why: "targets role viewer, not this caller"},
			{RuleID: 2, Level: LevelOrganization, Why: "selects namespace stripe, not this tool"},
			{RuleID: 3, Level: LevelOrganization, Why: "condition is false"},
			{RuleID: 4, Level: LevelOrganization, Matched: true, Why: "matched"},
			{RuleID: 7, Level: LevelWorkspace, Why: "condition is false"},
			{RuleID: 8, Level: LevelWorkspace, Matched: true, Why: "matched"},
		},
	}
	if d.Rule == nil || d.Rule.ID != 8 {
		t.Fatalf("Rule = %+v, want #8", d.Rule)
	}
	d.Rule = nil
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Decide (-want +got):\n%s", diff)
	}
	if got := Compile(rules).Len(); got != 7 {
		t.Errorf("Len() = %d, want 7 (one rule is disabled)", got)
	}
}

func TestDecisionApprovalSettings(t *testing.T) {
	r := org(1, 1, RequireApproval, func(r *Rule) { r.ApprovalTTL = time.Hour; r.AllowSelfApproval = true })
	d := Compile([]Rule{r}).Decide(ghGet, member, nil, testNow)
	if d.ApprovalTTL() != time.Hour || !d.AllowSelfApproval() {
		t.Errorf("ApprovalTTL() = %v, AllowSelfApproval() = %v; want 1h, true", d.ApprovalTTL(), d.AllowSelfApproval())
	}
	d = Compile(nil).Decide(ghDelete, member, nil, testNow)
	if d.ApprovalTTL() != DefaultApprovalTTL || d.AllowSelfApproval() {
		t.Errorf("default: ApprovalTTL() = %v, AllowSelfApproval() = %v; want %v, false", d.ApprovalTTL(), d.AllowSelfApproval(), DefaultApprovalTTL)
	}
}

func TestNilSet(t *testing.T) {
	var s *Set
	if s.Len() != 0 {
		t.Errorf("nil Set Len() = %d", s.Len())
	}
	if d := s.Decide(ghDelete, member, nil, testNow); d.Effect != RequireApproval || d.Level != LevelDefault {
		t.Errorf("nil Set Decide = %+v, want the default", d)
	}
	if s.Hidden(ghDelete, member, testNow) {
		t.Error("nil Set hides a tool")
	}
}

func TestCompileKeepsInputIntact(t *testing.T) {
	rules := []Rule{org(2, 2, "bogus"), org(1, 1, Allow, disabled()), rule(3, "", 0, Deny)}
	before := append([]Rule(nil), rules...)
	Compile(rules)
	if diff := cmp.Diff(before, rules); diff != "" {
		t.Errorf("Compile changed its input (-before +after):\n%s", diff)
	}
}

func TestHidden(t *testing.T) {
	tests := []struct {
		name   string
		rules  []Rule
		tool   Tool
		caller Caller
		want   bool
	}{
		{"no rules", nil, ghDelete, member, false},
		{"org deny", []Rule{org(1, 1, Deny)}, ghGet, member, true},
		{"org deny elsewhere", []Rule{org(1, 1, Deny, sel(SelectNamespace, "stripe"))}, ghGet, member, false},
		{"require approval is listed", []Rule{org(1, 1, RequireApproval)}, ghGet, member, false},
		{"deny depending on args is listed", []Rule{org(1, 1, Deny, cond("args.amount > 100"))}, ghGet, member, false},
		{"deny on tool fields is hidden", []Rule{org(1, 1, Deny, cond(`tool.method == "DELETE"`))}, ghDelete, member, true},
		{"deny on tool fields, other tool", []Rule{org(1, 1, Deny, cond(`tool.method == "DELETE"`))}, ghGet, member, false},
		{"deny on caller", []Rule{org(1, 1, Deny, cond(`caller.key != ""`))}, ghGet, member, true},
		{"deny on caller, console", []Rule{org(1, 1, Deny, cond(`caller.key != ""`))}, ghGet, admin, false},
		{"deny by role", []Rule{org(1, 1, Deny, role("member"))}, ghGet, member, true},
		{"deny by role, other role", []Rule{org(1, 1, Deny, role("member"))}, ghGet, admin, false},
		{"args-dependent allow before a deny", []Rule{org(1, 1, Allow, cond("args.dry_run == true")), org(2, 2, Deny)},
			ghGet, member, false},
		{"args-dependent deny before a deny", []Rule{org(1, 1, Deny, cond("args.dry_run == true")), org(2, 2, Deny)},
			ghGet, member, true},
		{"args-dependent require before a deny", []Rule{org(1, 1, RequireApproval, cond("has(args.x)")), org(2, 2, Deny)},
			ghGet, member, false},
		{"partial evaluation settles without args", []Rule{org(1, 1, Deny, cond(`has(args.x) || tool.method == "DELETE"`))},
			ghDelete, member, true},
		{"partial evaluation false without args", []Rule{org(1, 1, Allow, cond(`has(args.x) && tool.method == "GET"`)), org(2, 2, Deny)},
			ghDelete, member, true},
		{"workspace deny", []Rule{ws(1, 1, Deny)}, ghGet, member, true},
		{"workspace deny over org allow", []Rule{org(1, 1, Allow), ws(2, 1, Deny)}, ghGet, member, true},
		{"workspace allow under org deny", []Rule{org(1, 1, Deny), ws(2, 1, Allow)}, ghGet, member, true},
		{"org require, workspace deny by args", []Rule{org(1, 1, RequireApproval), ws(2, 1, Deny, cond("args.a == 1"))},
			ghGet, member, false},
		{"org maybe require, workspace deny", []Rule{org(1, 1, RequireApproval, cond("args.a == 1")), ws(2, 1, Deny)},
			ghGet, member, true},
		{"org maybe deny, workspace allow", []Rule{org(1, 1, Deny, cond("args.a == 1")), ws(2, 1, Allow)},
			ghGet, member, false},
		{"broken deny condition fails closed", []Rule{org(1, 1, Deny, cond("args.a =="))}, ghGet, member, true},
		{"broken allow condition does not match", []Rule{org(1, 1, Allow, cond("args.a ==")), org(2, 2, Deny)}, ghGet, member, true},
		{"runtime error without args fails closed", []Rule{org(1, 1, Deny, cond("tool.annotations.readOnlyHint == false"))},
			ghGet, member, true},
		{"disabled deny", []Rule{org(1, 1, Deny, disabled())}, ghGet, member, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Compile(tt.rules).Hidden(tt.tool, tt.caller, testNow); got != tt.want {
				t.Errorf("Hidden = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHiddenAgreesWithDecide checks, over many argument values, that a
// hidden tool is denied whatever the arguments.
func TestHiddenAgreesWithDecide(t *testing.T) {
	conds := []string{"", "args.a == 1", "has(args.b)", `tool.method == "DELETE"`, "args.a > 0 || true", "args.a < 0 && false", "args.zz > 1"}
	effects := []Effect{Allow, RequireApproval, Deny}
	argSets := []map[string]any{nil, {"a": 1.0}, {"a": -1.0, "b": true}, {"b": "x", "zz": 5.0}, {"a": "s"}}
	n := 0
	for _, c1 := range conds {
		for _, e1 := range effects {
			for _, c2 := range conds {
				for _, e2 := range effects {
					rules := []Rule{org(1, 1, e1, cond(c1)), ws(2, 1, e2, cond(c2))}
					s := Compile(rules)
					if !s.Hidden(ghDelete, member, testNow) {
						continue
					}
					n++
					for _, args := range argSets {
						if d := s.Decide(ghDelete, member, args, testNow); d.Effect != Deny {
							t.Errorf("rules %+v are hidden but args %v give %s: %s", rules, args, d.Effect, d.Reason)
						}
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no combination was hidden; the test checks nothing")
	}
}

func TestDecideConcurrent(t *testing.T) {
	s := Compile(benchRules())
	want := s.Decide(stripeCharge, member, map[string]any{"amount": 150.0}, testNow)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				got := s.Decide(stripeCharge, member, map[string]any{"amount": 150.0}, testNow)
				if diff := cmp.Diff(want, got); diff != "" {
					errs <- diff
					return
				}
				s.Hidden(ghDelete, member, testNow)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent Decide differs (-want +got):\n%s", e)
	}
}

// benchRules is a realistic set: 12 organization and 8 workspace rules,
// four with conditions.
func benchRules() []Rule {
	var rules []Rule
	for i := 0; i < 10; i++ {
		rules = append(rules, org(int64(100+i), i, Deny, sel(SelectPattern, fmt.Sprintf("svc%d.**", i))))
	}
	rules = append(rules,
		org(200, 20, RequireApproval, sel(SelectPattern, "stripe.**"), cond("args.amount > 100")),
		org(201, 21, Deny, role("viewer")),
	)
	for i := 0; i < 6; i++ {
		rules = append(rules, ws(int64(300+i), i, Deny, sel(SelectNamespace, fmt.Sprintf("ns%d", i))))
	}
	rules = append(rules,
		ws(400, 10, Deny, cond(`tool.method == "DELETE" && caller.key != ""`)),
		ws(401, 11, RequireApproval, sel(SelectPattern, "stripe.charges.*"), cond(`args.currency != "usd"`)),
	)
	return rules
}

// BenchmarkDecide evaluates a call against 20 rules, reaching two
// conditions (both levels match on the last rules considered).
func BenchmarkDecide(b *testing.B) {
	s := Compile(benchRules())
	args := map[string]any{"amount": 150.0, "currency": "usd"}
	b.ReportAllocs()
	for b.Loop() {
		s.Decide(stripeCharge, member, args, testNow)
	}
}

// BenchmarkDecideDefault is the same set when no rule matches: every
// target and selector is checked and one condition is evaluated.
func BenchmarkDecideDefault(b *testing.B) {
	s := Compile(benchRules())
	b.ReportAllocs()
	for b.Loop() {
		s.Decide(ghGet, admin, nil, testNow)
	}
}

// BenchmarkHidden is the listing check for the same set, with the args
// condition evaluated partially.
func BenchmarkHidden(b *testing.B) {
	s := Compile(benchRules())
	b.ReportAllocs()
	for b.Loop() {
		s.Hidden(stripeCharge, member, testNow)
	}
}

func BenchmarkMatchPattern(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		MatchPattern("github.**.repos.*", "github.orgs.acme.repos.get")
	}
}

func BenchmarkCompile(b *testing.B) {
	rules := benchRules()
	b.ReportAllocs()
	for b.Loop() {
		Compile(rules)
	}
}

// TestReasonKeepsArgumentValuesOut: CEL quotes the values a condition
// failed on, and a decision's reason reaches approvals, audit rows and the
// agent, so it names the failure without the error's text; the steps,
// which only the simulator shows to whoever typed the arguments, keep it.
func TestReasonKeepsArgumentValuesOut(t *testing.T) {
	const secret = "hunter2SECRET"
	set := Compile([]Rule{{ID: 1, Level: LevelOrganization, Target: TargetEveryone, Selector: SelectAll,
		Condition: `timestamp(args.password) > now`, Effect: Deny, Position: 1, Enabled: true}})
	d := set.Decide(Tool{Path: "vault.login", Namespace: "vault", Type: "openapi", DefaultApproval: "auto"},
		Caller{UserID: 1, Role: "member"}, map[string]any{"password": secret}, time.Now())
	if d.Effect != Deny {
		t.Fatalf("effect %s, want deny (fails closed)", d.Effect)
	}
	if strings.Contains(d.Reason, secret) {
		t.Fatalf("the reason quotes the argument: %s", d.Reason)
	}
	if len(d.Steps) != 1 || !strings.Contains(d.Steps[0].Why, "condition failed") {
		t.Fatalf("steps: %+v", d.Steps)
	}
}
