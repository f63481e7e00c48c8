// Package account renders sign-in, sign-up, account settings and personal
// access tokens.
package account

import (
	"time"

	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
)

// SignInPage is the sign-in form.
type SignInPage struct {
	Meta      layout.Meta
	Email     string
	Next      string
	Error     string
	CanSignUp bool
}

// SignUpPage is the sign-up form. Mode is "first" (empty instance), "open",
// "invited" (with Invite set) or "closed".
type SignUpPage struct {
	Meta    layout.Meta
	Mode    string
	Invite  *InviteInfo
	Email   string
	Name    string
	OrgName string
	Errors  validation.Errors
	Error   string
}

// InviteInfo describes the invitation a sign-up or acceptance is for.
type InviteInfo struct {
	Token   string
	OrgName string
	Email   string
	Role    string
}

// AcceptPage lets a signed-in person accept an invitation.
type AcceptPage struct {
	Meta   layout.Meta
	Invite InviteInfo
	Error  string
}

// ProfilePage is the account settings page: profile and password.
type ProfilePage struct {
	Meta           layout.Meta
	Email          string
	Name           string
	ProfileErrors  validation.Errors
	PasswordErrors validation.Errors
}

// TokensPage lists personal access tokens and creates them.
type TokensPage struct {
	Meta    layout.Meta
	Tokens  []TokenRow
	Form    TokenForm
	Created *CreatedToken
}

// TokenForm is the create-token form's state.
type TokenForm struct {
	CSRF          string
	Name          string
	ExpiresInDays string
	Errors        validation.Errors
}

// TokenRow is one token in the list.
type TokenRow struct {
	ID         string
	Name       string
	Prefix     string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
}

// CreatedToken is shown once, right after creation.
type CreatedToken struct {
	Name  string
	Value string
}

// ExpiryOptions are the choices of the create-token form.
var ExpiryOptions = []struct{ Value, Label string }{
	{"30", "30 days"}, {"90", "90 days"}, {"366", "1 year"}, {"0", "No expiry"},
}
