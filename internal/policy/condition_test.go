package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheckCondition(t *testing.T) {
	tests := []struct {
		src string
		// want is nil for a usable condition; Message is matched as a
		// substring.
		want *ConditionError
	}{
		{"", nil},
		{"args.amount > 100", nil},
		{"has(args.x) && args.x == 'y'", nil},
		{`tool.method != "GET"`, nil},
		{"tool.annotations.readOnlyHint == true", nil},
		{`caller.role == "admin" && caller.key == "" && caller.key_id == 0 && caller.user_id > 0`, nil},
		{`caller.user.endsWith("@example.com")`, nil},
		{"now.getHours() < 9", nil},
		{`args.name.lowerAscii().startsWith("prod-")`, nil},
		{`args.tags.exists(t, t == "prod")`, nil},
		{"[1].exists(tool, tool > 0)", nil}, // a comprehension variable may shadow `tool`
		{`[{"methd": 1}].exists(tool, tool.methd == 1)`, nil},
		{"args.x", &ConditionError{Message: "the condition must be a bool, but it is dyn", Line: 1, Column: 1}},
		{"1 + 2", &ConditionError{Message: "the condition must be a bool, but it is int", Line: 1, Column: 1}},
		{"1 +", &ConditionError{Message: "Syntax error: mismatched input '<EOF>'", Line: 1, Column: 4, Offset: 3}},
		{"args.amount >\n  foo", &ConditionError{Message: "undeclared reference to 'foo'", Line: 2, Column: 3, Offset: 16}},
		// Columns count characters, offsets count bytes.
		{"'é' == foo", &ConditionError{Message: "undeclared reference to 'foo'", Line: 1, Column: 8, Offset: 8}},
		{"size(args) > 'a'", &ConditionError{Message: "found no matching overload for '_>_'", Line: 1, Column: 12, Offset: 11}},
		{"tool.methd == 'GET'", &ConditionError{
			Message: `tool has no key "methd"; its keys are path, namespace, source, source_id, type, method, annotations`,
			Line:    1, Column: 6, Offset: 5}},
		{"args.a == 1 &&\ncaller.nme == 'x' && tool.pth == ''", &ConditionError{
			Message: `caller has no key "nme"`, Line: 2, Column: 8, Offset: 22}},
		{`args.id.matches("^[a-z")`, &ConditionError{
			Message: "invalid regular expression: error parsing regexp: missing closing ]: `[a-z`", Line: 1, Column: 17, Offset: 16}},
		{"has(args.x) &&\n  matches(args.x, '(')", &ConditionError{
			Message: "invalid regular expression: error parsing regexp: missing closing ): `(`", Line: 2, Column: 19, Offset: 33}},
		{`now > timestamp("2026-13-01")`, &ConditionError{Message: "invalid timestamp: write it in RFC 3339", Line: 1, Column: 17, Offset: 16}},
		{`now - timestamp("2026-01-01T00:00:00Z") > duration("2 days")`, &ConditionError{
			Message: `invalid duration: write it like duration("90s")`, Line: 1, Column: 52, Offset: 51}},
		{strings.Repeat("a", MaxConditionLen+1), &ConditionError{Message: "the condition is 4001 bytes long; the limit is 4000", Line: 1, Column: 1}},
		{"args.a == 'x\xff'", &ConditionError{Message: "not valid UTF-8", Line: 1, Column: 13, Offset: 12}},
	}
	for _, tt := range tests {
		got := CheckCondition(tt.src)
		if tt.want == nil {
			if got != nil {
				t.Errorf("CheckCondition(%q) = %+v, want nil", tt.src, got)
			}
			continue
		}
		if got == nil {
			t.Errorf("CheckCondition(%q) = nil, want %+v", tt.src, tt.want)
			continue
		}
		if !strings.Contains(got.Message, tt.want.Message) {
			t.Errorf("CheckCondition(%q).Message = %q, want it to contain %q", tt.src, got.Message, tt.want.Message)
		}
		gotPos := [3]int{got.Line, got.Column, got.Offset}
		wantPos := [3]int{tt.want.Line, tt.want.Column, tt.want.Offset}
		if gotPos != wantPos {
			t.Errorf("CheckCondition(%q) at line, column, offset %v, want %v (%s)", tt.src, gotPos, wantPos, got.Message)
		}
	}
}

// evalCondition compiles src and evaluates it for one call.
func evalCondition(t *testing.T, src string, tool Tool, caller Caller, args map[string]any, now time.Time) (bool, error) {
	t.Helper()
	cond, err := newCondition(src)
	if err != nil {
		t.Fatalf("condition %q does not compile: %v", src, err)
	}
	return cond.eval(&activation{tool: tool, caller: caller, args: args, now: now})
}

func TestConditionValues(t *testing.T) {
	tool := Tool{
		Path: "github.repos.delete", Namespace: "github", SourceID: "src_1", Source: "GitHub",
		Type: "openapi", Method: "DELETE", Annotations: map[string]any{"destructiveHint": true},
	}
	caller := Caller{UserID: 7, UserEmail: "ada@example.com", Role: "admin", KeyID: 3, KeyName: "ci"}
	console := Caller{UserID: 7, UserEmail: "ada@example.com", Role: "admin"}
	// A Sunday, 10:30 UTC.
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)

	tests := []struct {
		name    string
		src     string
		tool    Tool
		caller  Caller
		args    map[string]any
		want    bool
		wantErr string
	}{
		{"json number above", "args.amount > 100", tool, caller, map[string]any{"amount": 150.0}, true, ""},
		{"json number below", "args.amount > 100", tool, caller, map[string]any{"amount": 99.5}, false, ""},
		{"go int", "args.amount > 100", tool, caller, map[string]any{"amount": 101}, true, ""},
		{"int against double", "args.amount >= 100.5", tool, caller, map[string]any{"amount": int64(101)}, true, ""},
		{"json number equals int", "args.count == 3", tool, caller, map[string]any{"count": 3.0}, true, ""},
		{"has present", "has(args.x)", tool, caller, map[string]any{"x": nil}, true, ""},
		{"has absent", "has(args.x)", tool, caller, map[string]any{}, false, ""},
		{"nil args", "has(args.x)", tool, caller, nil, false, ""},
		{"missing key", "args.amount > 100", tool, caller, map[string]any{}, false, "no such key: amount"},
		{"nested", `args.repo.owner == "acme" && args.labels[0] == "bug"`, tool, caller,
			map[string]any{"repo": map[string]any{"owner": "acme"}, "labels": []any{"bug"}}, true, ""},
		{"exists", `args.tags.exists(t, t == "prod")`, tool, caller, map[string]any{"tags": []any{"dev", "prod"}}, true, ""},
		{"regex", `args.name.matches("^prod-[0-9]+$")`, tool, caller, map[string]any{"name": "prod-12"}, true, ""},
		{"strings ext", `args.name.lowerAscii() == "prod"`, tool, caller, map[string]any{"name": "PROD"}, true, ""},
		{"type mismatch", "args.amount > 100", tool, caller, map[string]any{"amount": "lots"}, false, "no such overload"},
		{"method", `tool.method != "GET"`, tool, caller, nil, true, ""},
		{"tool fields", `tool.path == "github.repos.delete" && tool.namespace == "github" && tool.source == "GitHub" &&
			tool.source_id == "src_1" && tool.type == "openapi"`, tool, caller, nil, true, ""},
		{"annotation", "tool.annotations.destructiveHint == true", tool, caller, nil, true, ""},
		{"no annotations", "has(tool.annotations.readOnlyHint)", Tool{Path: "x.y"}, caller, nil, false, ""},
		{"caller fields", `caller.role == "admin" && caller.user == "ada@example.com" && caller.user_id == 7 &&
			caller.key == "ci" && caller.key_id == 3`, tool, caller, nil, true, ""},
		{"console caller", `caller.key == "" && caller.key_id == 0`, tool, console, nil, true, ""},
		{"tool as a whole", `"method" in tool && tool["method"] == "DELETE" && tool.path.startsWith("github.")`, tool, caller, nil, true, ""},
		{"caller as a whole", `size(caller) == 5 && caller.user_id == 7 && "key_id" in caller`, tool, caller, nil, true, ""},
		{"missing annotation", "tool.annotations.readOnlyHint == true", tool, caller, nil, false, "no such key: readOnlyHint"},
		{"has on tool", "has(tool.method) && has(caller.key)", tool, caller, nil, true, ""},
		{"now hours", "now.getHours() >= 9 && now.getHours() < 17", tool, caller, nil, true, ""},
		{"now in a zone", `now.getHours("Europe/Paris") == 11`, tool, caller, nil, true, ""},
		{"now weekday", "now.getDayOfWeek() == 0", tool, caller, nil, true, ""},
		{"now before", `now < timestamp("2026-01-01T00:00:00Z")`, tool, caller, nil, false, ""},
		{"cost limit", "args.items.all(a, args.items.all(b, a + b >= 0))", tool, caller,
			map[string]any{"items": make([]any, 1000)}, false, "cost limit exceeded"},
	}
	for i := range tests[len(tests)-1].args["items"].([]any) {
		tests[len(tests)-1].args["items"].([]any)[i] = float64(i)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := evalCondition(t, tt.src, tt.tool, tt.caller, tt.args, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("eval(%q) error = %v, want one containing %q", tt.src, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("eval(%q) error = %v", tt.src, err)
			}
			if got != tt.want {
				t.Errorf("eval(%q) = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestConditionUses(t *testing.T) {
	for src, want := range map[string]uses{
		"args.amount > 1":                          {args: true},
		"has(args.x)":                              {args: true},
		"size(args) > 0":                           {args: true},
		`tool.method == "GET"`:                     {},
		`has(tool.annotations.readOnlyHint)`:       {},
		`caller.role == "admin"`:                   {},
		`"method" in tool`:                         {wholeTool: true},
		`tool["method"] == "GET"`:                  {wholeTool: true},
		`tool.method == "GET" && size(caller) > 0`: {wholeCaller: true},
		"now.getHours() > 9 || true":               {},
		`args.x == 1 || tool.type == ""`:           {args: true},
	} {
		cond, err := newCondition(src)
		if err != nil {
			t.Fatalf("newCondition(%q): %v", src, err)
		}
		if cond.uses != want {
			t.Errorf("newCondition(%q) uses %+v, want %+v", src, cond.uses, want)
		}
	}
}

func FuzzCheckCondition(f *testing.F) {
	for _, s := range []string{
		"", "args.amount > 100", "has(args.x)", `tool.method != "GET"`, "1 +", "args.x",
		`args.tags.exists(t, t.startsWith("p"))`, "now.getHours() < 9", `caller.role in ["admin", "owner"]`,
		"tool.methd == 1", `args.s.matches("(a+)+$")`, "args.l.map(x, x * 2).size() > 3",
		"'\xff'", "((((((((((1))))))))))==1", `args.a / 0 == 1`, `int(args.s) > 3`,
	} {
		f.Add(s, 150.5, "prod-1")
	}
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, src string, amount float64, name string) {
		cerr := CheckCondition(src)
		rules := []Rule{
			{ID: 1, Level: LevelOrganization, Target: TargetEveryone, Selector: SelectAll, Condition: src, Effect: Deny, Enabled: true},
			{ID: 2, Level: LevelWorkspace, Target: TargetEveryone, Selector: SelectAll, Condition: src, Effect: Allow, Enabled: true},
		}
		set := Compile(rules)
		tool := Tool{Path: "a.b", Namespace: "a", Type: "mcp", DefaultApproval: "auto"}
		args := map[string]any{"amount": amount, "name": name, "list": []any{amount, name}, "m": map[string]any{"k": name}}
		d := set.Decide(tool, Caller{UserID: 1, Role: "member"}, args, now)
		set.Hidden(tool, Caller{UserID: 1, Role: "member"}, now)
		if cerr == nil && strings.Contains(d.Steps[0].Why, "does not compile") {
			t.Fatalf("CheckCondition accepts %q but Compile does not: %s", src, d.Steps[0].Why)
		}
		if cerr != nil {
			if cerr.Message == "" || cerr.Line < 1 || cerr.Column < 1 || cerr.Offset < 0 || cerr.Offset > len(src) {
				t.Fatalf("CheckCondition(%q) = %+v: want a message and a position inside the source", src, cerr)
			}
			// A condition that does not compile fails closed: the deny
			// rule matches and the allow rule does not.
			want := []Step{
				{RuleID: 1, Level: LevelOrganization, Matched: true, Why: d.Steps[0].Why},
				{RuleID: 2, Level: LevelWorkspace, Matched: false, Why: d.Steps[1].Why},
			}
			if d.Effect != Deny || d.Rule == nil || d.Rule.ID != 1 || cmp.Diff(want, d.Steps) != "" {
				t.Fatalf("condition %q does not compile but the decision is %+v", src, d)
			}
		}
	})
}
