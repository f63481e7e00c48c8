// Package sources renders tool sources: the list, the new-source and edit
// forms with their Test panel, a source's detail with its tools, and the
// import from MCP client configurations.
package sources

import (
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/ui"
)

// ListPage lists the sources a workspace sees.
type ListPage struct {
	Meta      layout.Meta
	Rows      []Row
	Filter    Filter
	CanEdit   bool
	Action    string // the list's own URL, for the filter form
	NewURL    string
	ImportURL string
}

// Filter is the list's filter and sort.
type Filter struct {
	Q, Type, State, Scope, Sort string
}

// Active reports whether any filter is set.
func (f Filter) Active() bool { return f.Q != "" || f.Type != "" || f.State != "" || f.Scope != "" }

// Row is one source in the list.
type Row struct {
	URL           string
	Name          string
	Slug          string
	Type          string
	Scope         string
	State         string
	Enabled       bool
	ToolCount     int
	LastRefreshed *time.Time
	Error         string
}

// Form is the state of the new-source and edit forms.
type Form struct {
	CSRF       string
	Action     string
	TestAction string
	Editing    bool
	Name       string
	Type       string
	Scope      string
	// MCP
	Transport string
	Command   string
	Args      string // one per line
	Env       string // KEY=value per line
	Cwd       string
	URL       string
	Headers   string // Name: value per line
	// ConnectTimeout and CallTimeout are whole seconds; empty keeps the defaults.
	ConnectTimeout string
	CallTimeout    string
	// OpenAPI
	Spec    string // URL or document
	BaseURL string
	// GraphQL
	Endpoint string
	Schema   string
	// ApprovalOverride is "", "auto" or "required": see ApprovalOptions.
	ApprovalOverride string

	Errors validation.Errors
	// AllowStdio and CanOrgScope decide which choices the form offers.
	AllowStdio  bool
	CanOrgScope bool
}

// NewPage creates a source.
type NewPage struct {
	Meta layout.Meta
	Form Form
	// Test is a Test run's result when the form was sent without htmx.
	Test *TestPanel
}

// TestPanel shows what a Test run found.
type TestPanel struct {
	Result *sources.TestResult
	// Invalid is set when the form itself has problems.
	Invalid bool
}

// DetailPage shows one source and its tools.
type DetailPage struct {
	Meta        layout.Meta
	Source      Detail
	Tools       []ToolRow
	Page, Pages int
	PrevURL     string
	NextURL     string
	CanEdit     bool
	CSRF        string
	ListURL     string
	Test        *sources.TestResult
	DeleteError string
	// Credentials of the source the reader sees, in the order calls use them.
	Credentials []CredentialRow
	// NewCredentialURL adds one; empty for viewers.
	NewCredentialURL string
}

// CredentialRow is one credential of a source, without its value.
type CredentialRow struct {
	Scope, Describe, Hint, URL string
	LastUsed                   *time.Time
}

// Detail is a source as its page shows it.
type Detail struct {
	ID, Name, Slug, Type, Scope, State, Error string
	Enabled                                   bool
	Config                                    string // masked, indented JSON
	Warnings                                  []sources.Warning
	Quality                                   *sources.Quality
	AuthProfile                               *sources.AuthProfile
	SecretKeys                                []string
	ToolCount                                 int
	Server, BaseURL, SpecHash                 string
	DiscoveryMS                               int
	LastRefreshed, LastSuccess, LastFailure   *time.Time
	CreatedAt                                 time.Time
	URL, EditURL                              string
	// ApprovalOverride is "", "auto" or "required": see ApprovalLabel.
	ApprovalOverride string
}

// ToolRow is one tool in a source's list.
type ToolRow struct {
	Path            string
	Description     string
	DefaultApproval string
}

// ImportPage previews and runs an import of an MCP client configuration.
type ImportPage struct {
	Meta    layout.Meta
	CSRF    string
	Action  string
	Text    string
	Error   string
	Entries []sources.ImportEntry
	Result  *sources.ImportResult
	ListURL string
}

// Percent formats a share as a whole percentage.
func Percent(f float64) string {
	return strconv.Itoa(int(f*100+0.5)) + "%"
}

// StateClass is the badge style of a state.
func StateClass(state string, enabled bool) string {
	if !enabled {
		return "badge"
	}
	switch state {
	case "ready":
		return "badge ok"
	case "failed":
		return "badge danger"
	}
	return "badge warn"
}

// TransportOptions are the MCP transports offered.
func TransportOptions(allowStdio bool) []string {
	if allowStdio {
		return []string{"stdio", "streamable-http", "sse"}
	}
	return []string{"streamable-http", "sse"}
}

// Busy reports whether a refresh is queued or running.
func Busy(state string) bool { return state == "queued" || state == "loading" || state == "indexing" }

// ApprovalOptions are the choices of a source's approval override.
var ApprovalOptions = []ui.Option{
	{Value: "", Label: "Each tool's default"},
	{Value: "auto", Label: "Never ask (auto)"},
	{Value: "required", Label: "Always require approval"},
}

// ApprovalLabel says what a source's approval override does.
func ApprovalLabel(override string) string {
	for _, o := range ApprovalOptions {
		if o.Value == override {
			return o.Label
		}
	}
	return override
}
