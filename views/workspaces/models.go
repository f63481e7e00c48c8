// Package workspaces renders workspace lists, homes and settings.
package workspaces

import (
	"time"

	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/ui"
)

// ListPage lists an organization's workspaces.
type ListPage struct {
	Meta       layout.Meta
	Workspaces []Row
}

// Row is one workspace in the list.
type Row struct {
	Slug      string
	Name      string
	CreatedAt time.Time
}

// Form is the state of the create or rename form.
type Form = ui.NameForm

// NewPage creates a workspace.
type NewPage struct {
	Meta layout.Meta
	Form Form
}

// SettingsPage renames or deletes a workspace.
type SettingsPage struct {
	Meta    layout.Meta
	Form    Form
	Delete  DeleteForm
	CanEdit bool
	// Approvers is shown to owners and admins only.
	Approvers *Approvers
}

// ApproversID is the approvers section's element id, which htmx swaps.
const ApproversID = "approvers"

// Approvers is the workspace's approver role: members who decide its
// approval requests beside the organization's owners and admins.
type Approvers struct {
	CSRF string
	// Action adds the member chosen in Candidates.
	Action string
	Rows   []ApproverRow
	// Candidates are the members (role member) who are not approvers yet.
	Candidates []ui.Option
	Selected   string
	Error      string
}

// ApproverRow is one approver.
type ApproverRow struct {
	UserID    string
	Name      string
	Email     string
	Role      string
	AddedBy   string
	CreatedAt time.Time
	// RemoveURL takes the role away.
	RemoveURL string
}

// DeleteForm is the typed-confirmation delete form.
type DeleteForm struct {
	CSRF    string
	Action  string
	Slug    string
	Confirm string
	Error   string
}

// SoonPage is a workspace section that a later release fills.
type SoonPage struct {
	Meta  layout.Meta
	Title string
	What  string
}

// SectionBlurbs say what each coming section will do.
var SectionBlurbs = map[string]string{
	"sources":     "Register MCP servers, OpenAPI specs and GraphQL endpoints as tool sources.",
	"tools":       "Search the tools of every source this workspace sees, read their schemas and try them.",
	"credentials": "Attach encrypted credentials to sources, per account, workspace or organization.",
	"policies":    "Allow, deny or hold tool calls for approval with ordered rules.",
	"approvals":   "Approve or deny tool calls that policies hold for a person.",
	"activity":    "Every tool call, who made it and what came back.",
	"api-keys":    "Workspace API keys that agents use to reach the MCP endpoint.",
}
