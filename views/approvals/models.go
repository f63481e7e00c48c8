// Package approvals renders a workspace's approval requests: the live list
// with its status tabs, and one request's page, the link sent to approvers.
package approvals

import (
	"fmt"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/tools"
)

// BodyID is the list region that re-fetches itself on each approval event.
const BodyID = "approvals-body"

// RunID is the requester's Run now section of a request's page.
const RunID = "approval-run"

// CardID is the element id of one request's card.
func CardID(id string) string { return "approval-" + id }

// CommentID is the id of a request's comment field; the list keeps the
// field (and what was typed in it) across live refreshes by this id.
func CommentID(id string) string { return "comment-" + id }

// Page lists a workspace's requests with one status tab selected.
type Page struct {
	Meta layout.Meta
	Tabs []Tab
	Body ListBody
}

// Tab is one status filter.
type Tab struct {
	Label   string
	URL     string
	Current bool
	Status  string
}

// ListBody is the list region: the cards, or an empty state.
type ListBody struct {
	// Status is the tab's status, "" for all.
	Status string
	// FragmentURL is this list as a fragment, fetched again on each
	// approval event.
	FragmentURL string
	CSRF        string
	Cards       []Card
	// Truncated is set when there are more requests than the page shows.
	Truncated bool
}

// Card is one request, in the list or on its own page.
type Card struct {
	ID  string
	URL string
	// Tool is the path; ToolURL its page in the catalog.
	Tool    string
	ToolURL string
	// Key and User name the caller: the API key (or "Console") and its owner.
	Key  string
	User string
	// Rule describes the policy rule that held the call; RuleURL is its
	// edit page, empty when the tool's default held it.
	Rule        string
	RuleURL     string
	Reason      string
	Arguments   string
	Status      string
	RequestedAt time.Time
	ExpiresAt   time.Time
	DecidedAt   *time.Time
	DecidedBy   string
	Comment     string
	ExecutedAt  *time.Time
	// Now is when the page was made, for relative times.
	Now time.Time
	// Decide is set when the request is pending; its CanDecide says
	// whether the viewer may, and Why says why not.
	Decide *Decision
}

// Decision is the approve/deny form of a pending request.
type Decision struct {
	CanDecide  bool
	Why        string
	CSRF       string
	ApproveURL string
	DenyURL    string
	// Back is where to return after deciding: the list or this page.
	Back string
}

// Detail is one request's page.
type Detail struct {
	Meta    layout.Meta
	ListURL string
	// FragmentURL keeps the page live, as on the list.
	FragmentURL string
	Card        Card
	// Run is set for the person who asked for the call: the Run now form
	// of an approved request, or the outcome of an executed one.
	Run *Run
}

// Run is the requester's part of a request's page.
type Run struct {
	// CanRun shows the Run now button (the request is approved).
	CanRun bool
	Action string
	CSRF   string
	// Result is the call's outcome, once it ran.
	Result *tools.TryResult
}

// Statuses are the tabs in order; "" is every request.
var Statuses = []struct{ Status, Label string }{
	{"pending", "Pending"}, {"approved", "Approved"}, {"denied", "Denied"}, {"expired", "Expired"},
	{"executed", "Executed"}, {"", "All"},
}

// StatusClass is the badge class of a status.
func StatusClass(status string) string {
	switch status {
	case "approved", "executed":
		return "badge ok"
	case "denied":
		return "badge danger"
	case "pending", "executing":
		return "badge warn"
	}
	return "badge"
}

// EmptyText says what an empty tab means.
func EmptyText(status string) (title, text string) {
	switch status {
	case "pending":
		return "Nothing waits for a decision", "When a policy holds an agent's call for approval, it shows here at once, without reloading, and the agent waits for your answer."
	case "":
		return "No approval requests yet", "Calls that a require_approval rule (or a tool's default) holds show here for owners, admins and approvers to decide."
	}
	return "No " + status + " requests", "Requests move here once they are " + status + "."
}

// TimeFormat is how absolute times show (UTC).
const TimeFormat = "2 Jan 2006 15:04:05"

// Relative says how far t is from now: "in 9 min", "3 h ago", "just now".
func Relative(t, now time.Time) string {
	d := t.Sub(now)
	future := d > 0
	if d < 0 {
		d = -d
	}
	var s string
	switch {
	case d < 30*time.Second:
		return "just now"
	case d < 90*time.Second:
		s = "1 min"
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Round(time.Hour)/time.Hour))
	default:
		s = fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func current(b bool) string {
	if b {
		return "page"
	}
	return "false"
}

func tabKey(status string) string {
	if status == "" {
		return "all"
	}
	return status
}

func count(n int) string { return strconv.Itoa(n) }

// decisionWord names what a decided request's status says happened.
func decisionWord(status string) string {
	switch status {
	case "denied":
		return "Denied"
	case "expired":
		return "Expired"
	}
	return "Approved"
}
