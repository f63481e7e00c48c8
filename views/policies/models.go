// Package policies renders policy rules: the ordered rules of an
// organization and of a workspace, the rule editor with its live check of
// the CEL condition, and the simulator that explains a decision.
package policies

import (
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/ui"
)

// Element ids that htmx targets.
const (
	// FormID is the rule editor, swapped whole on errors.
	FormID = "policy-form"
	// CheckID is the condition's check under its field.
	CheckID = "condition-check"
	// SimulatorID is the simulator with its result, swapped whole.
	SimulatorID = "simulator"
)

// LevelID is the id of a level's rules, swapped after a move, a toggle or
// a deletion: "rules-organization" or "rules-workspace".
func LevelID(level string) string { return "rules-" + level }

// RowID is the id of a rule's row, which links to a rule point at.
func RowID(id string) string { return "rule-" + id }

// ListPage is the rules of an organization or of a workspace, and the simulator.
type ListPage struct {
	Meta  layout.Meta
	Title string
	Lead  string
	// Inherited is the organization's rules, read-only, on a workspace's
	// page; nil on the organization's own page.
	Inherited *Level
	Own       Level
	// NewURL adds a rule; empty for members and viewers.
	NewURL    string
	Simulator Simulator
}

// Level is one level's ordered rules.
type Level struct {
	// Name is "organization" or "workspace".
	Name  string
	Title string
	Lead  string
	Rows  []Row
	CSRF  string
	// ManageURL links to where the rules are edited, for inherited rules.
	ManageURL string
	// Editable shows the buttons that change the rules.
	Editable  bool
	EmptyText string
}

// ID is the level's element id.
func (l Level) ID() string { return LevelID(l.Name) }

// Row is one rule in a list.
type Row struct {
	ID        string
	Position  int
	Effect    string
	Target    string
	Selector  string
	Condition string
	Note      string
	Enabled   bool
	// Approval says how long a held call waits and who may decide, for
	// require_approval rules.
	Approval string
	// Dangling says what the rule points at no longer exists.
	Dangling string
	First    bool
	Last     bool
	// URL is the rule's base URL: /edit, /move, /enabled and /delete follow.
	URL string
}

// EffectLabel is an effect as people read it.
func EffectLabel(effect string) string {
	switch effect {
	case "allow":
		return "Allow"
	case "require_approval":
		return "Require approval"
	case "deny":
		return "Deny"
	}
	return effect
}

// EffectClass is the badge class of an effect.
func EffectClass(effect string) string {
	switch effect {
	case "allow":
		return "badge ok"
	case "require_approval":
		return "badge warn"
	case "deny":
		return "badge danger"
	}
	return "badge"
}

// FormPage creates or edits a rule.
type FormPage struct {
	Meta    layout.Meta
	Title   string
	ListURL string
	Form    Form
}

// Form is the rule editor's state; every value is kept as typed.
type Form struct {
	CSRF        string
	Action      string
	CheckAction string
	CancelURL   string
	Editing     bool
	// Where says which rules this one joins.
	Where string

	TargetType   string
	TargetRole   string
	TargetUserID string
	TargetKeyID  string

	SelectorType      string
	SelectorSource    string
	SelectorNamespace string
	SelectorPattern   string

	Condition          string
	Effect             string
	ApprovalTTLMinutes string
	AllowSelfApproval  bool
	Enabled            bool
	Note               string

	Users      []ui.Option
	Keys       []ui.Option
	Sources    []ui.Option
	Namespaces []string

	Check  Check
	Errors validation.Errors
}

// Check is what the live check found in a condition.
type Check struct {
	Empty bool
	// Message is the problem, "" when the condition is valid.
	Message string
	Line    int
	Column  int
	// Excerpt is the line with the problem, and Caret points at its column.
	Excerpt string
	Caret   string
}

// Where is the problem, as "line 2, column 7".
func (c Check) Where() string {
	return "line " + strconv.Itoa(c.Line) + ", column " + strconv.Itoa(c.Column)
}

// Options of the editor's selects.
var (
	TargetOptions = []ui.Option{
		{Value: "everyone", Label: "Everyone"}, {Value: "role", Label: "A role"},
		{Value: "user", Label: "A member"}, {Value: "key", Label: "An API key"},
	}
	RoleOptions = []ui.Option{
		{Value: "owner", Label: "Owners"}, {Value: "admin", Label: "Admins"},
		{Value: "member", Label: "Members"}, {Value: "viewer", Label: "Viewers"},
	}
	SelectorOptions = []ui.Option{
		{Value: "all", Label: "All tools"}, {Value: "source", Label: "One source"},
		{Value: "namespace", Label: "A namespace"}, {Value: "pattern", Label: "A path pattern"},
	}
	EffectOptions = []ui.Option{
		{Value: "allow", Label: "Allow"}, {Value: "require_approval", Label: "Require approval"}, {Value: "deny", Label: "Deny"},
	}
)

// Simulator tries a call against the rules.
type Simulator struct {
	CSRF   string
	Action string
	// Workspaces is offered on the organization's page, whose rules bind
	// every workspace; empty on a workspace's page.
	Workspaces []ui.Option
	Workspace  string
	Members    []ui.Option
	Keys       []ui.Option
	// Caller is "user:<id>" or "key:<id>".
	Caller    string
	Paths     []string
	Path      string
	Arguments string
	Errors    validation.Errors
	Result    *Result
}

// Result is a simulated decision and how it was reached.
type Result struct {
	Effect string
	// Decider names the deciding rule, or the tool's default.
	Decider    string
	DeciderURL string
	Reason     string
	Tool       string
	Caller     string
	Steps      []Step
}

// Step is one rule's part in a simulated decision.
type Step struct {
	Rule    string
	RuleURL string
	Level   string
	Matched bool
	Why     string
}

// caret is spaces up to col (1-based) and a ^.
func caret(col int) string { return strings.Repeat(" ", max(col-1, 0)) + "^" }

// NewCheck is the check of a condition with a problem at line:column.
func NewCheck(src, message string, line, column int) Check {
	lines := strings.Split(src, "\n")
	c := Check{Message: message, Line: line, Column: column}
	if line >= 1 && line <= len(lines) {
		c.Excerpt = strings.TrimRight(lines[line-1], "\r")
		c.Caret = caret(column)
	}
	return c
}

// withNone puts an empty first choice before opts.
func withNone(opts []ui.Option, label string) []ui.Option {
	return append([]ui.Option{{Value: "", Label: label}}, opts...)
}

// selectorError is the selector's error, shown next to the field of the
// chosen kind.
func selectorError(f Form, kind string) string {
	if f.SelectorType != kind {
		return ""
	}
	return f.Errors["selector"]
}
