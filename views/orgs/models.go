// Package orgs renders organizations, their settings, members and invitations.
package orgs

import (
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/ui"
)

// ListPage lists the organizations the person belongs to.
type ListPage struct {
	Meta layout.Meta
	Orgs []layout.OrgNav
}

// NameForm is the state of the name form.
type NameForm = ui.NameForm

// NewPage creates an organization.
type NewPage struct {
	Meta layout.Meta
	Form NameForm
}

// SettingsPage renames an organization and lets a member leave it.
type SettingsPage struct {
	Meta    layout.Meta
	Form    NameForm
	Leave   string // action URL of leaving
	CanEdit bool
}

// MembersPage lists members and pending invitations.
type MembersPage struct {
	Meta        layout.Meta
	Members     []MemberRow
	Invitations []InvitationRow
	Invite      InviteForm
	// Created is the one-time link of a new invitation.
	Created *CreatedInvitation
}

// MemberRow is one member.
type MemberRow struct {
	CSRF    string
	OrgSlug string
	UserID  int64
	Email   string
	Name    string
	Role    string
	Joined  time.Time
	IsSelf  bool
	CanEdit bool
	// CanGrantOwner is set for owners, who alone manage the owner role.
	CanGrantOwner bool
	Error         string
}

// ID is the user id as it appears in URLs.
func (m MemberRow) ID() string { return strconv.FormatInt(m.UserID, 10) }

// RowID is the element id htmx swaps for this member.
func RowID(userID int64) string { return "member-" + strconv.FormatInt(userID, 10) }

// InvitationRow is one pending invitation.
type InvitationRow struct {
	ID        int64
	Email     string
	Role      string
	InvitedBy string
	ExpiresAt time.Time
}

// InviteForm is the invite form's state.
type InviteForm struct {
	CSRF    string
	Action  string
	Email   string
	Role    string
	Errors  validation.Errors
	IsOwner bool
}

// CreatedInvitation is shown once to the inviter.
type CreatedInvitation struct {
	Email string
	Link  string
}

// RoleOptions are the roles a person may assign.
func RoleOptions(includeOwner bool) []ui.Option {
	opts := []ui.Option{}
	if includeOwner {
		opts = append(opts, ui.Option{Value: "owner", Label: "Owner"})
	}
	return append(opts,
		ui.Option{Value: "admin", Label: "Admin"},
		ui.Option{Value: "member", Label: "Member"},
		ui.Option{Value: "viewer", Label: "Viewer"})
}
