// Package activity renders a workspace's tool calls: the filtered list with
// its "Older" pages, and one call's detail.
package activity

import (
	"time"

	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/ui"
)

// BodyID is the element the filter form and the "Older" link swap.
const BodyID = "activity"

// RowID is the id of a call's row in the list.
func RowID(id string) string { return "call-" + id }

// Page lists a workspace's calls, newest first.
type Page struct {
	Meta layout.Meta
	// Action is the page's own URL, which the filters submit to.
	Action string
	Filter Filter
	Errors validation.Errors
	// Keys are the key select's choices: the workspace's keys, revoked ones too.
	Keys []ui.Option
	Rows []Row
	// OlderURL is the next page, empty on the last.
	OlderURL string
	// APIKeysURL is where the empty state sends people to connect an agent.
	APIKeysURL string
}

// Filter is the filter form as submitted.
type Filter struct {
	Tool    string
	Key     string
	Outcome string
	// Range is 1h, 24h, 7d, 30d, custom or empty (any time); From and To
	// bound a custom range, in UTC.
	Range  string
	From   string
	To     string
	Cursor string
}

// Active reports whether the filters narrow the list or page through it.
func (f Filter) Active() bool {
	return f.Tool != "" || f.Key != "" || f.Outcome != "" || f.Range != "" || f.From != "" || f.To != "" || f.Cursor != ""
}

// Row is one call in the list.
type Row struct {
	ID        string
	URL       string
	StartedAt time.Time
	Tool      string
	// Key is the key's name, "Console", or "Deleted key".
	Key      string
	User     string
	Outcome  string
	Status   string
	Duration string
}

// Detail is one call.
type Detail struct {
	Meta      layout.Meta
	ListURL   string
	ID        string
	Tool      string
	StartedAt time.Time
	Outcome   string
	Error     string
	// Arguments are pretty-printed JSON.
	Arguments string
	// Truncated is set when the arguments were too large to keep whole.
	Truncated bool
	SourceID  string
	SourceURL string
	Status    string
	Duration  string
	Key       string
	User      string
	Via       string
}

// OutcomeOptions are the outcome select's choices.
var OutcomeOptions = []ui.Option{
	{Value: "", Label: "Any outcome"},
	{Value: "ok", Label: "OK"},
	{Value: "error", Label: "Error"},
	{Value: "timeout", Label: "Timeout"},
	{Value: "invalid", Label: "Invalid arguments"},
	{Value: "not_found", Label: "Tool not found"},
	{Value: "denied", Label: "Denied"},
	{Value: "pending", Label: "Held for approval"},
	{Value: "expired", Label: "Approval expired"},
}

// RangeOptions are the time select's choices.
var RangeOptions = []ui.Option{
	{Value: "", Label: "Any time"},
	{Value: "1h", Label: "Last hour"},
	{Value: "24h", Label: "Last 24 hours"},
	{Value: "7d", Label: "Last 7 days"},
	{Value: "30d", Label: "Last 30 days"},
	{Value: "custom", Label: "From – to (below)"},
}

// OutcomeClass is the badge class of an outcome.
func OutcomeClass(outcome string) string {
	switch outcome {
	case "ok":
		return "badge ok"
	case "error", "timeout", "denied", "expired":
		return "badge danger"
	}
	return "badge warn"
}

// TimeFormat is how the console shows a call's time (UTC).
const TimeFormat = "2 Jan 2006 15:04:05"
