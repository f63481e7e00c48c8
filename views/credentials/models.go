// Package credentials renders credentials: the lists of a workspace, of an
// organization and of the signed-in user, the create form that follows the
// chosen source's auth profile, and a credential's page with its Replace,
// Edit, Test and Delete forms.
//
// No view model here has a field for a secret value: a form sent back with
// errors keeps its parameters and loses its secrets by construction.
package credentials

import (
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/ui"
)

// Element ids that htmx targets; handlers and views agree through these.
const (
	FormID        = "credential-form"
	ReplaceFormID = "credential-replace"
	EditFormID    = "credential-edit"
	TestTargetID  = "credential-test"
)

// RowID is the id of a credential's row in a list.
func RowID(id string) string { return "credential-" + id }

// ListPage lists credentials: a workspace's, an organization's or the
// user's own.
type ListPage struct {
	Meta  layout.Meta
	Title string
	Lead  string
	Rows  []Row
	// FilterURL is the list's own URL for the filter form; empty hides it.
	FilterURL string
	Filter    Filter
	Sources   []ui.Option
	// NewURL is the create page; empty when the caller may not create here.
	NewURL string
	// ReadOnly says the caller sees metadata only (viewers).
	ReadOnly bool
	// Mine lists the user's own credentials across organizations.
	Mine       bool
	EmptyTitle string
	EmptyText  string
}

// Filter narrows a list by scope and source.
type Filter struct {
	Scope    string
	SourceID string
}

// Active reports whether any filter is set.
func (f Filter) Active() bool { return f.Scope != "" || f.SourceID != "" }

// Row is a credential as lists and its page show it: metadata only.
type Row struct {
	ID  string
	URL string
	// Org names the organization, on My credentials.
	Org        string
	SourceID   string
	SourceName string
	SourceSlug string
	SourceType string
	// SourceURL is the source's page; empty when no workspace shows it.
	SourceURL  string
	Scope      string
	ScopeLabel string
	// Holder says whose it is: you, a workspace, the organization.
	Holder     string
	Type       string
	TypeLabel  string
	Auth       string
	Hint       string
	CreatedBy  string
	CreatedAt  time.Time
	UpdatedBy  string
	UpdatedAt  time.Time
	LastUsedAt *time.Time
	// CanManage allows Replace, Edit, Test and Delete.
	CanManage bool
}

// Changed reports whether the credential was changed after it was created.
func (r Row) Changed() bool { return r.UpdatedAt.Sub(r.CreatedAt) > time.Second }

// ScopeClass is the badge style of a scope.
func ScopeClass(scope string) string {
	switch scope {
	case "account":
		return "badge scope-account"
	case "organization":
		return "badge scope-org"
	}
	return "badge"
}

// SourceChoice is a source the create form offers.
type SourceChoice struct {
	ID    string
	Label string
	// Group is the option group (an organization on My credentials).
	Group string
}

// Form is the state of the create form and of a credential's Edit and
// Replace forms. It holds the auth parameters and header names; secret
// values have no field and are never sent back.
type Form struct {
	ID     string
	CSRF   string
	Action string
	// RefillURL re-renders the create form for another source (GET);
	// empty on a credential's own forms.
	RefillURL string
	// Editing is a credential's Edit form: no source or scope, and empty
	// secret fields keep the stored value.
	Editing bool
	// SecretOnly is the Replace form: the secret fields of Type only.
	SecretOnly bool

	SourceID string
	Sources  []SourceChoice
	Scope    string
	Scopes   []ui.Option

	Type         string
	BearerHeader string
	BearerScheme string
	KeyIn        string
	KeyName      string
	Username     string
	// HeaderNames are the names of custom headers (or environment
	// variables); their values are secret.
	HeaderNames []string

	// Stdio is set when the source runs as a local process: custom
	// headers become its environment variables.
	Stdio bool
	// Profile says what the source's inferred auth profile expects.
	Profile string
	Errors  validation.Errors
}

// HeaderRows are the name rows the form shows: the names given, then blank
// rows to fill (at least three in all).
func (f Form) HeaderRows() []string {
	rows := append([]string{}, f.HeaderNames...)
	blank := 1
	if len(rows) < 3 {
		blank = 3 - len(rows)
	}
	if f.SecretOnly {
		blank = 0
		if len(rows) == 0 {
			blank = 1
		}
	}
	for range blank {
		rows = append(rows, "")
	}
	return rows
}

// SecretError is the error of a type's secret: its own field's, or the
// general one.
func (f Form) SecretError(field string) string {
	if msg := f.Errors[field]; msg != "" {
		return msg
	}
	return f.Errors["secret"]
}

// NewPage creates a credential.
type NewPage struct {
	Meta    layout.Meta
	Title   string
	ListURL string
	Form    Form
	// NoSources says there is no source to attach a credential to.
	NoSources  bool
	SourcesURL string
}

// DetailPage shows one credential with its forms.
type DetailPage struct {
	Meta       layout.Meta
	Credential Row
	CSRF       string
	ListURL    string
	ListLabel  string
	Replace    Form
	Edit       Form
	Test       *TestResult
	// DeleteError asks to confirm the deletion.
	DeleteError string
}

// TestResult is what a Test run with the credential found.
type TestResult struct {
	ToolCount int
	LatencyMS int64
	Server    string
	// Error is why discovery failed, with the credential's secrets
	// redacted.
	Error string
}

// found ends the sentence of a successful run.
func (t TestResult) found() string {
	out := "found in " + t.Latency() + " with this credential"
	if t.Server != "" {
		out += " from " + t.Server
	}
	return out + ". Nothing was saved."
}

// Latency formats a run's duration.
func (t TestResult) Latency() string { return strconv.FormatInt(t.LatencyMS, 10) + " ms" }

// TypeOptions are the auth types the forms offer.
func TypeOptions() []ui.Option {
	out := make([]ui.Option, 0, len(credentials.Types))
	for _, t := range credentials.Types {
		out = append(out, ui.Option{Value: string(t), Label: t.Label()})
	}
	return out
}

// TypeLabel is a source type's name for people.
func TypeLabel(t string) string {
	switch t {
	case "mcp":
		return "MCP"
	case "openapi":
		return "OpenAPI"
	case "graphql":
		return "GraphQL"
	}
	return t
}

// Who names a person, or says they are no longer here.
func Who(name string) string {
	if name == "" {
		return "someone no longer here"
	}
	return name
}
