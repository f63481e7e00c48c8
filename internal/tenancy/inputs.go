// Package tenancy holds the rules of accounts, organizations, members,
// invitations and workspaces: who may do what, and what a valid name is.
package tenancy

import (
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/validation"
)

// SignUpInput creates an account.
type SignUpInput struct {
	Email    string `json:"email" form:"email"`
	Name     string `json:"name" form:"name"`
	Password string `json:"password" form:"password"`
	// OrgName names the new organization (not used when joining by invitation).
	OrgName string `json:"org_name" form:"org_name"`
	// Invite is an invitation token to accept with the new account.
	Invite string `json:"invite" form:"invite"`
}

// Normalize trims what people paste.
func (in *SignUpInput) Normalize() {
	in.Email = strings.TrimSpace(in.Email)
	in.Name = strings.TrimSpace(in.Name)
	in.OrgName = strings.TrimSpace(in.OrgName)
	in.Invite = strings.TrimSpace(in.Invite)
}

// Validate checks every field.
func (in SignUpInput) Validate() validation.Errors {
	e := validation.Errors{}
	e.Email("email", in.Email)
	if in.Name != "" {
		e.Name("name", in.Name, 100)
	}
	e.Password("password", in.Password)
	if in.Invite == "" {
		e.Name("org_name", in.OrgName, validation.MaxNameLen)
	}
	return e
}

// ProfileInput changes an account's name and email.
type ProfileInput struct {
	Email string `json:"email" form:"email"`
	Name  string `json:"name" form:"name"`
}

// Validate checks every field.
func (in *ProfileInput) Validate() validation.Errors {
	in.Email, in.Name = strings.TrimSpace(in.Email), strings.TrimSpace(in.Name)
	e := validation.Errors{}
	e.Email("email", in.Email)
	if in.Name != "" {
		e.Name("name", in.Name, 100)
	}
	return e
}

// PasswordInput changes a password.
type PasswordInput struct {
	Current string `json:"current_password" form:"current_password"`
	New     string `json:"new_password" form:"new_password"`
	Confirm string `json:"confirm_password" form:"confirm_password"`
}

// Validate checks every field (the current password is checked by the service).
func (in PasswordInput) Validate() validation.Errors {
	e := validation.Errors{}
	if in.Current == "" {
		e.Add("current_password", "Enter your current password.")
	}
	e.Password("new_password", in.New)
	if in.Confirm != in.New {
		e.Add("confirm_password", "The two new passwords differ.")
	}
	return e
}

// NameInput names an organization or a workspace; an empty slug on create is
// derived from the name.
type NameInput struct {
	Name string `json:"name" form:"name"`
	Slug string `json:"slug" form:"slug"`
}

// Validate checks every field; requireSlug is set when renaming.
func (in *NameInput) Validate(requireSlug bool) validation.Errors {
	in.Name, in.Slug = strings.TrimSpace(in.Name), strings.TrimSpace(in.Slug)
	e := validation.Errors{}
	e.Name("name", in.Name, validation.MaxNameLen)
	if in.Slug != "" || requireSlug {
		e.Slug("slug", in.Slug)
	} else if _, bad := e["name"]; !bad && validation.Slugify(in.Name) == "" {
		e.Add("slug", "Enter a URL name: the name has no letters or digits to make one from.")
	}
	return e
}

// InviteInput invites someone by email.
type InviteInput struct {
	Email string `json:"email" form:"email"`
	Role  string `json:"role" form:"role"`
}

// Validate checks every field.
func (in *InviteInput) Validate() validation.Errors {
	in.Email = strings.TrimSpace(in.Email)
	e := validation.Errors{}
	e.Email("email", in.Email)
	if !auth.Role(in.Role).Valid() {
		e.Add("role", "Choose owner, admin, member or viewer.")
	}
	return e
}

// RoleInput changes a member's role.
type RoleInput struct {
	Role string `json:"role" form:"role"`
}

// Validate checks the role.
func (in RoleInput) Validate() validation.Errors {
	e := validation.Errors{}
	if !auth.Role(in.Role).Valid() {
		e.Add("role", "Choose owner, admin, member or viewer.")
	}
	return e
}

// TokenInput creates a personal access token.
type TokenInput struct {
	Name string `json:"name" form:"name"`
	// ExpiresInDays is 0 for a token that never expires.
	ExpiresInDays int `json:"expires_in_days" form:"expires_in_days"`
}

// MaxTokenDays is the longest expiry a token can be given.
const MaxTokenDays = 366

// Validate checks every field.
func (in *TokenInput) Validate() validation.Errors {
	in.Name = strings.TrimSpace(in.Name)
	e := validation.Errors{}
	e.Name("name", in.Name, validation.MaxNameLen)
	if in.ExpiresInDays < 0 || in.ExpiresInDays > MaxTokenDays {
		e.Add("expires_in_days", "Choose between 1 and 366 days, or 0 for no expiry.")
	}
	return e
}

// ExpiresAt is when the token stops working, or nil.
func (in TokenInput) ExpiresAt(now time.Time) *time.Time {
	if in.ExpiresInDays == 0 {
		return nil
	}
	t := now.Add(time.Duration(in.ExpiresInDays) * 24 * time.Hour)
	return &t
}

// DeleteWorkspaceInput confirms a deletion by retyping the workspace's slug.
type DeleteWorkspaceInput struct {
	Confirm string `json:"confirm" form:"confirm"`
}
