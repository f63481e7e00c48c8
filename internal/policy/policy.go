// Package policy decides whether a tool call is allowed, held for a
// person's approval, or denied. Rules live at two levels, the organization
// and the workspace; within a level the first enabled rule that matches,
// by position, decides. An organization's decision binds its workspaces: a
// workspace rule can make it stricter (deny over require_approval over
// allow) but never looser. With no matching rule at either level the
// tool's default applies (its own, or its source's override).
//
// A rule targets everyone, a role, a user or an API key; selects all
// tools, one source, one namespace or a path pattern (`*` is one segment,
// `**` any depth); and may carry a CEL condition over args, tool, caller
// and now. This package is pure: the caller loads rules and compiles them
// into a [Set], which is safe for concurrent use and cheap to evaluate.
//
// Conditions are CEL (cel.dev/cel-go) with the standard library and the
// strings extension, over these variables:
//
//	args    map(string, dyn)  the call's arguments, as decoded JSON
//	tool    map               path, namespace, source, source_id, type,
//	                          method, annotations (a map of MCP hints)
//	caller  map               user (email), user_id, role, key (the API
//	                          key's name, "" for the console), key_id
//	now     timestamp         the time of the call; its accessors read
//	                          UTC unless given a zone: now.getHours("Europe/Paris")
//
// Numbers compare across types, so `args.amount > 100` works for a JSON
// number decoded as float64. A condition must have type bool
// ([CheckCondition] reports the first problem with its position) and its
// evaluation is cost-limited.
//
// Everything that cannot be evaluated fails closed: a stored condition
// that no longer compiles, one that fails at run time (a missing key, the
// cost limit), an invalid pattern or an unknown target make a deny or
// require_approval rule match and an allow rule not match; a tool with no
// known default requires approval.
//
// Compile costs tens of microseconds per condition; callers keep a Set per
// policy version rather than compiling per call. Decide takes a few
// microseconds for a few dozen rules.
package policy

import (
	"time"
)

// Effect is what a decision does to a call.
type Effect string

// Effects, from loosest to strictest.
const (
	Allow           Effect = "allow"
	RequireApproval Effect = "require_approval"
	Deny            Effect = "deny"
)

// Valid reports whether e is one of the three effects.
func (e Effect) Valid() bool { return e == Allow || e == RequireApproval || e == Deny }

// Stricter returns the stricter of e and o.
func (e Effect) Stricter(o Effect) Effect {
	if rank(o) > rank(e) {
		return o
	}
	return e
}

func rank(e Effect) int {
	switch e {
	case Deny:
		return 2
	case RequireApproval:
		return 1
	}
	return 0
}

// TargetType is whom a rule applies to.
type TargetType string

// Targets.
const (
	TargetEveryone TargetType = "everyone"
	TargetRole     TargetType = "role"
	TargetUser     TargetType = "user"
	TargetKey      TargetType = "key"
)

// SelectorType is which tools a rule applies to.
type SelectorType string

// Selectors.
const (
	SelectAll       SelectorType = "all"
	SelectSource    SelectorType = "source"    // Selector is a source id (src_...)
	SelectNamespace SelectorType = "namespace" // Selector is a path's first segment
	SelectPattern   SelectorType = "pattern"   // Selector is a path pattern
)

// Level says where a rule lives.
type Level string

// Levels; LevelDefault is the tool's default when no rule matched.
const (
	LevelOrganization Level = "organization"
	LevelWorkspace    Level = "workspace"
	LevelDefault      Level = "default"
)

// DefaultApprovalTTL is how long an approval waits when a rule says nothing.
const DefaultApprovalTTL = 10 * time.Minute

// Rule is one stored rule.
type Rule struct {
	ID int64
	// Level is LevelOrganization or LevelWorkspace.
	Level Level

	Target TargetType
	// Role is set for TargetRole, UserID for TargetUser, KeyID for TargetKey.
	Role   string
	UserID int64
	KeyID  int64

	Selector SelectorType
	// Value is the source id, namespace or pattern; empty for SelectAll.
	Value string

	// Condition is a CEL expression that must evaluate to a bool; empty
	// matches every call the target and selector match.
	Condition string
	Effect    Effect
	Position  int
	Enabled   bool
	Note      string

	// ApprovalTTL is how long a held call waits (require_approval only).
	ApprovalTTL time.Duration
	// AllowSelfApproval lets the caller decide on their own request.
	AllowSelfApproval bool
}

// Tool is what a rule sees of the tool being called (CEL: `tool`).
type Tool struct {
	Path      string // tool.path
	Namespace string // tool.namespace, the path's first segment
	SourceID  string // tool.source_id
	Source    string // tool.source, the source's name
	Type      string // tool.type: openapi, graphql or mcp
	// Method is the HTTP method of an OpenAPI operation, "POST" for
	// GraphQL, "" for MCP (tool.method).
	Method string
	// Annotations are MCP's hints as JSON keys (readOnlyHint, ...):
	// tool.annotations.
	Annotations map[string]any
	// DefaultApproval is "auto" or "required", the tool's own.
	DefaultApproval string
	// ApprovalOverride is the source's override, "" when none.
	ApprovalOverride string
}

// Caller is who makes the call (CEL: `caller`).
type Caller struct {
	UserID    int64  // caller.user_id
	UserEmail string // caller.user
	Role      string // caller.role: owner, admin, member or viewer
	KeyID     int64  // caller.key_id; 0 for the console
	KeyName   string // caller.key; "" for the console
}

// Decision is the outcome of evaluating a call.
type Decision struct {
	Effect Effect
	// Rule decided; nil when the tool's default did.
	Rule *Rule
	// Level is where the deciding rule lives, or LevelDefault.
	Level Level
	// Reason says in a sentence why, for people and agents.
	Reason string
	// Steps is the evaluation's trace for the simulator: each rule
	// considered, in order, and what it did.
	Steps []Step
}

// ApprovalTTL is how long a call this decision holds waits.
func (d Decision) ApprovalTTL() time.Duration {
	if d.Rule != nil && d.Rule.ApprovalTTL > 0 {
		return d.Rule.ApprovalTTL
	}
	return DefaultApprovalTTL
}

// AllowSelfApproval reports whether the caller may decide on their own request.
func (d Decision) AllowSelfApproval() bool { return d.Rule != nil && d.Rule.AllowSelfApproval }

// Step is one rule's part in an evaluation.
type Step struct {
	RuleID int64
	Level  Level
	// Matched: the target, selector and condition all matched.
	Matched bool
	// Why says what did or did not match, e.g. "condition false",
	// "targets role admin", "condition failed: no such key: amount".
	Why string
}

// ConditionError is a CEL condition that does not compile or is not a
// bool, with where the problem is (1-based line and column, 0-based byte
// offset) so an editor can point at it.
type ConditionError struct {
	Message string
	Line    int
	Column  int
	Offset  int
}

func (e *ConditionError) Error() string { return e.Message }
