// Package auditlog renders an organization's audit log: who changed its
// configuration or decided its approvals, newest first, with "Older"
// pages.
package auditlog

import (
	"time"

	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/ui"
)

// BodyID is the element the filter form and the "Older" link swap.
const BodyID = "audit-log"

// Page lists an organization's events.
type Page struct {
	Meta layout.Meta
	// Action is the page's own URL, which the filters submit to.
	Action string
	Filter Filter
	Errors validation.Errors
	// Workspaces are the workspace select's choices.
	Workspaces []ui.Option
	Rows       []Row
	// OlderURL is the next page, empty on the last.
	OlderURL string
}

// Filter is the filter form as submitted.
type Filter struct {
	Category  string
	Workspace string
	Cursor    string
}

// Active reports whether the filters narrow the list or page through it.
func (f Filter) Active() bool { return f.Category != "" || f.Workspace != "" || f.Cursor != "" }

// Row is one event.
type Row struct {
	ID string
	At time.Time
	// Actor is the person's name or email; "Deleted user" or "toolgate".
	Actor string
	// Action is what happened, in words; Kind picks its badge.
	Action, Kind string
	// Target names what it happened to; TargetURL links it, when it has a page.
	Target, TargetURL string
	// Workspace is the workspace's name; empty for the organization.
	Workspace string
	// Details are the event's facts, as label and value.
	Details []Detail
}

// Detail is one fact of an event.
type Detail struct{ Label, Value string }

// CategoryOptions are the category select's choices: the part of an
// action before its dot.
var CategoryOptions = []ui.Option{
	{Value: "", Label: "Everything"},
	{Value: "organization", Label: "Organization settings"},
	{Value: "workspace", Label: "Workspaces"},
	{Value: "member", Label: "Members"},
	{Value: "source", Label: "Sources"},
	{Value: "credential", Label: "Credentials"},
	{Value: "api_key", Label: "API keys"},
	{Value: "policy", Label: "Policies"},
	{Value: "approval", Label: "Approval decisions"},
	{Value: "approver", Label: "Approvers"},
}

// TimeFormat is how the log shows an event's time (UTC).
const TimeFormat = "2 Jan 2006 15:04:05"
