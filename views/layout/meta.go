// Package layout is the console's frame: the document shell, the sidebar
// with its organization and workspace switchers, and flash messages.
package layout

import "encoding/json"

// Meta is what every page's frame needs.
type Meta struct {
	Title string
	CSRF  string
	// User is nil for anonymous pages.
	User *UserNav
	// Org and Workspace are the current ones, if any.
	Org        *OrgNav
	Orgs       []OrgNav
	Workspace  *WorkspaceNav
	Workspaces []WorkspaceNav
	// Section marks the active sidebar entry.
	Section string
	// PendingApprovals counts the current workspace's calls waiting for a
	// decision; the sidebar shows it as a badge that updates live.
	PendingApprovals int
	Flash            *Flash
}

// UserNav names the signed-in person.
type UserNav struct {
	Name  string
	Email string
}

// Display is the name to show, falling back to the email.
func (u UserNav) Display() string {
	if u.Name != "" {
		return u.Name
	}
	return u.Email
}

// OrgNav is an organization in the switcher.
type OrgNav struct {
	Slug string
	Name string
	Role string
}

// WorkspaceNav is a workspace in the switcher.
type WorkspaceNav struct {
	Slug string
	Name string
}

// Flash is a one-time message shown after a redirect.
type Flash struct {
	Kind    string // success, info, error
	Message string
}

// CanAdmin reports whether the current role manages the organization.
func (m Meta) CanAdmin() bool {
	return m.Org != nil && (m.Org.Role == "owner" || m.Org.Role == "admin")
}

func (m Meta) htmxHeaders() string {
	b, _ := json.Marshal(map[string]string{"X-CSRF-Token": m.CSRF})
	return string(b)
}

// Sections are the workspace areas in sidebar order. Later parts fill them;
// until then they show as coming soon.
var Sections = []Section{
	{Key: "sources", Label: "Sources", Ready: true},
	{Key: "tools", Label: "Tools", Ready: true},
	{Key: "credentials", Label: "Credentials", Ready: true},
	{Key: "policies", Label: "Policies", Ready: true},
	{Key: "approvals", Label: "Approvals", Ready: true},
	{Key: "activity", Label: "Activity", Ready: true},
	{Key: "api-keys", Label: "API keys", Ready: true},
	{Key: "connect", Label: "Connect an agent", Ready: true},
}

// Section is a sidebar entry of a workspace.
type Section struct {
	Key   string
	Label string
	// Ready is set once the section exists.
	Ready bool
}

// SectionByKey finds a workspace section.
func SectionByKey(key string) (Section, bool) {
	for _, s := range Sections {
		if s.Key == key {
			return s, true
		}
	}
	return Section{}, false
}

// htmxConfig swaps 422 (a form with its errors) and error fragments, which
// the server retargets to the alert area.
const htmxConfig = `{"responseHandling":[{"code":"204","swap":false},{"code":"[2345]..","swap":true}],"defaultSwapStyle":"outerHTML","includeIndicatorStyles":false}`
