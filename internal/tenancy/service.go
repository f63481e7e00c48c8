package tenancy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/validation"
)

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 7 * 24 * time.Hour

// DefaultWorkspace names the workspace every new organization starts with.
const DefaultWorkspace = "Default"

// Signup modes, as configured by TOOLGATE_SIGNUP.
const (
	SignupOpen   = "open"
	SignupInvite = "invite"
	SignupClosed = "closed"
)

// ErrSignupClosed: this instance does not take new accounts that way.
var ErrSignupClosed = errors.New("sign-up is closed on this instance")

// Service applies the tenancy rules over the store.
type Service struct {
	Store *db.Store
	// Signup is open, invite or closed; the first account is always allowed.
	Signup string
	// Auth checks passwords again before they change.
	Auth *auth.Authenticator
}

// SignUpMode says what the sign-up page should offer: "first" on an empty
// instance, else the configured mode.
func (s *Service) SignUpMode(ctx context.Context) (string, error) {
	n, err := s.Store.CountUsers(ctx)
	if err != nil {
		return "", fmt.Errorf("count users: %w", err)
	}
	if n == 0 {
		return "first", nil
	}
	return s.Signup, nil
}

// SignUp creates an account. On an empty instance, or with open sign-up, it
// also creates the person's organization and its Default workspace and makes
// them owner; with an invitation it joins the inviting organization instead.
// It returns the account and the slug of the organization to open.
func (s *Service) SignUp(ctx context.Context, in SignUpInput) (db.User, string, error) {
	in.Normalize()
	mode, err := s.SignUpMode(ctx)
	if err != nil {
		return db.User{}, "", err
	}
	var inv db.Invitation
	switch {
	case in.Invite != "" && mode != "first":
		if mode == SignupClosed {
			return db.User{}, "", ErrSignupClosed
		}
		if inv, err = s.pendingInvitation(ctx, in.Invite); err != nil {
			return db.User{}, "", err
		}
		if !strings.EqualFold(inv.Email, in.Email) {
			return db.User{}, "", validation.Field("email", "This invitation is for "+inv.Email+".")
		}
	case mode == SignupOpen || mode == "first":
		in.Invite = ""
	default:
		return db.User{}, "", ErrSignupClosed
	}
	if problems := in.Validate(); len(problems) > 0 {
		return db.User{}, "", problems
	}
	hash, err := auth.HashPassword(in.Password)
	if err != nil {
		return db.User{}, "", err
	}
	var user db.User
	orgSlug := inv.OrgSlug
	err = s.Store.InTx(ctx, func(tx *sqlx.Tx) error {
		user, err = db.CreateUser(ctx, tx, in.Email, in.Name, hash)
		if errors.Is(err, db.ErrConflict) {
			return validation.Field("email", "An account with this email exists; sign in instead.")
		} else if err != nil {
			return err
		}
		if inv.ID != 0 {
			return db.AcceptInvitation(ctx, tx, inv, user.ID)
		}
		org, err := s.createOrganization(ctx, tx, user.ID, NameInput{Name: in.OrgName})
		orgSlug = org.Slug
		return err
	})
	return user, orgSlug, err
}

// CreateOrganization makes userID the owner of a new organization that starts
// with a Default workspace.
func (s *Service) CreateOrganization(ctx context.Context, userID int64, in NameInput) (db.Organization, error) {
	if problems := in.Validate(false); len(problems) > 0 {
		return db.Organization{}, problems
	}
	var org db.Organization
	err := s.Store.InTx(ctx, func(tx *sqlx.Tx) (err error) {
		org, err = s.createOrganization(ctx, tx, userID, in)
		return err
	})
	return org, err
}

func (s *Service) createOrganization(ctx context.Context, tx *sqlx.Tx, userID int64, in NameInput) (db.Organization, error) {
	slug := in.Slug
	if slug == "" {
		var err error
		if slug, err = s.freeOrgSlug(ctx, validation.Slugify(in.Name)); err != nil {
			return db.Organization{}, err
		}
	}
	org, err := db.CreateOrganization(ctx, tx, slug, in.Name)
	if errors.Is(err, db.ErrConflict) {
		return db.Organization{}, validation.Field("slug", "This URL name is taken; choose another.")
	} else if err != nil {
		return db.Organization{}, fmt.Errorf("create organization: %w", err)
	}
	if err := db.AddMember(ctx, tx, org.ID, userID, string(auth.Owner)); err != nil {
		return db.Organization{}, fmt.Errorf("add owner: %w", err)
	}
	if _, err := db.CreateWorkspace(ctx, tx, org.ID, "default", DefaultWorkspace); err != nil {
		return db.Organization{}, fmt.Errorf("create default workspace: %w", err)
	}
	return org, nil
}

// freeOrgSlug returns base, or base-2, base-3 ... whichever is free.
func (s *Service) freeOrgSlug(ctx context.Context, base string) (string, error) {
	if base == "" {
		base = "org"
	}
	for i := 1; ; i++ {
		slug := base
		if i > 1 {
			suffix := fmt.Sprintf("-%d", i)
			slug = strings.TrimRight(base[:min(len(base), 40-len(suffix))], "-") + suffix
		}
		taken, err := s.Store.OrganizationSlugTaken(ctx, slug, 0)
		if err != nil || !taken {
			return slug, err
		}
	}
}

// UpdateOrganization renames an organization and may change its slug.
func (s *Service) UpdateOrganization(ctx context.Context, orgID, actorID int64, in NameInput) (db.Organization, error) {
	if problems := in.Validate(true); len(problems) > 0 {
		return db.Organization{}, problems
	}
	org, err := s.Store.UpdateOrganization(ctx, orgID, in.Slug, in.Name, actorID)
	if errors.Is(err, db.ErrConflict) {
		return db.Organization{}, validation.Field("slug", "This URL name is taken; choose another.")
	}
	return org, err
}

// CreateWorkspace adds a workspace to an organization.
func (s *Service) CreateWorkspace(ctx context.Context, orgID, actorID int64, in NameInput) (db.Workspace, error) {
	if problems := in.Validate(false); len(problems) > 0 {
		return db.Workspace{}, problems
	}
	if in.Slug == "" {
		in.Slug = validation.Slugify(in.Name)
	}
	ws, err := s.Store.CreateWorkspace(ctx, orgID, in.Slug, in.Name, actorID)
	return ws, workspaceConflict(err)
}

// UpdateWorkspace renames a workspace and may change its slug.
func (s *Service) UpdateWorkspace(ctx context.Context, orgID, actorID, id int64, in NameInput) (db.Workspace, error) {
	if problems := in.Validate(true); len(problems) > 0 {
		return db.Workspace{}, problems
	}
	ws, err := s.Store.UpdateWorkspace(ctx, orgID, id, in.Slug, in.Name, actorID)
	return ws, workspaceConflict(err)
}

func workspaceConflict(err error) error {
	switch {
	case db.ConflictOn(err, "workspaces_name_key"):
		return validation.Field("name", "A workspace with this name exists.")
	case errors.Is(err, db.ErrConflict):
		return validation.Field("slug", "A workspace with this URL name exists.")
	}
	return err
}

// DeleteWorkspace deletes a workspace once its slug has been typed back.
func (s *Service) DeleteWorkspace(ctx context.Context, ws db.Workspace, actorID int64, in DeleteWorkspaceInput) error {
	if strings.TrimSpace(in.Confirm) != ws.Slug {
		return validation.Field("confirm", "Type "+ws.Slug+" to confirm.")
	}
	return s.Store.DeleteWorkspace(ctx, ws.OrgID, ws.ID, actorID)
}

// Invite creates an invitation and returns it with its one-time token. Only
// owners may invite owners.
func (s *Service) Invite(ctx context.Context, orgID int64, by db.User, byRole auth.Role, in InviteInput) (db.Invitation, string, error) {
	if problems := in.Validate(); len(problems) > 0 {
		return db.Invitation{}, "", problems
	}
	if auth.Role(in.Role) == auth.Owner && byRole != auth.Owner {
		return db.Invitation{}, "", validation.Field("role", "Only owners can invite owners.")
	}
	if u, err := s.Store.UserByEmail(ctx, in.Email); err == nil {
		if _, err := s.Store.Member(ctx, orgID, u.ID); err == nil {
			return db.Invitation{}, "", validation.Field("email", "This person is already a member.")
		}
	}
	if pending, err := s.Store.PendingInvitationFor(ctx, orgID, in.Email); err != nil {
		return db.Invitation{}, "", err
	} else if pending {
		return db.Invitation{}, "", validation.Field("email", "This address already has a pending invitation; revoke it to send a new one.")
	}
	plain, hash, _ := auth.NewSecret(auth.InvitationPrefix)
	inv, err := s.Store.CreateInvitation(ctx, orgID, in.Email, in.Role, hash, by.ID, time.Now().Add(InvitationTTL))
	return inv, plain, err
}

// ErrInvitationInvalid: the token matches no pending invitation.
var ErrInvitationInvalid = errors.New("this invitation link is not valid: it may have been used, revoked or have expired")

// PendingInvitation returns the invitation a token stands for, if it can
// still be accepted.
func (s *Service) PendingInvitation(ctx context.Context, token string) (db.Invitation, error) {
	return s.pendingInvitation(ctx, strings.TrimSpace(token))
}

func (s *Service) pendingInvitation(ctx context.Context, token string) (db.Invitation, error) {
	if !strings.HasPrefix(token, auth.InvitationPrefix) {
		return db.Invitation{}, ErrInvitationInvalid
	}
	inv, err := s.Store.InvitationByToken(ctx, auth.HashSecret(token))
	if errors.Is(err, db.ErrNotFound) || err == nil && !inv.Pending(time.Now()) {
		return db.Invitation{}, ErrInvitationInvalid
	}
	return inv, err
}

// ErrInvitationOtherEmail: the invitation was sent to someone else.
var ErrInvitationOtherEmail = errors.New("this invitation was sent to another email address; sign in with that account to accept it")

// ErrAlreadyMember: the person already belongs to the organization.
var ErrAlreadyMember = errors.New("you are already a member of this organization")

// AcceptInvitation adds the signed-in user to the inviting organization.
func (s *Service) AcceptInvitation(ctx context.Context, user db.User, token string) (db.Invitation, error) {
	inv, err := s.PendingInvitation(ctx, token)
	if err != nil {
		return db.Invitation{}, err
	}
	if !strings.EqualFold(inv.Email, user.Email) {
		return db.Invitation{}, ErrInvitationOtherEmail
	}
	err = s.Store.InTx(ctx, func(tx *sqlx.Tx) error { return db.AcceptInvitation(ctx, tx, inv, user.ID) })
	switch {
	case errors.Is(err, db.ErrConflict):
		return db.Invitation{}, ErrAlreadyMember
	case errors.Is(err, db.ErrInvitationUsed):
		return db.Invitation{}, ErrInvitationInvalid
	}
	return inv, err
}

// ChangeRole sets a member's role, as byID. Admins manage admins, members and viewers;
// only owners grant or take away the owner role; the last owner stays.
func (s *Service) ChangeRole(ctx context.Context, orgID, byID int64, byRole auth.Role, userID int64, in RoleInput) (db.Member, error) {
	if problems := in.Validate(); len(problems) > 0 {
		return db.Member{}, problems
	}
	target, err := s.Store.Member(ctx, orgID, userID)
	if err != nil {
		return db.Member{}, err
	}
	if byRole != auth.Owner && (auth.Role(target.Role) == auth.Owner || auth.Role(in.Role) == auth.Owner) {
		return db.Member{}, auth.ErrForbidden
	}
	m, err := s.Store.SetRole(ctx, orgID, userID, in.Role, byID)
	if errors.Is(err, db.ErrLastOwner) {
		return db.Member{}, validation.Field("role", "The last owner cannot be demoted; make someone else owner first.")
	}
	return m, err
}

// RemoveMember removes someone from an organization: anyone may leave, admins
// remove non-owners, owners remove anyone; the last owner stays.
func (s *Service) RemoveMember(ctx context.Context, orgID int64, by db.User, byRole auth.Role, userID int64) error {
	target, err := s.Store.Member(ctx, orgID, userID)
	if err != nil {
		return err
	}
	if by.ID != userID {
		if !byRole.AtLeast(auth.Admin) || auth.Role(target.Role) == auth.Owner && byRole != auth.Owner {
			return auth.ErrForbidden
		}
	}
	err = s.Store.RemoveMember(ctx, orgID, userID, by.ID)
	if errors.Is(err, db.ErrLastOwner) {
		return ErrLastOwner
	}
	return err
}

// ErrLastOwner: the last owner can neither leave nor be removed.
var ErrLastOwner = errors.New("the last owner cannot leave or be removed; make someone else owner first")

// CreateToken issues a personal access token and returns it with its one-time value.
func (s *Service) CreateToken(ctx context.Context, userID int64, in TokenInput) (db.Token, string, error) {
	if problems := in.Validate(); len(problems) > 0 {
		return db.Token{}, "", problems
	}
	plain, hash, prefix := auth.NewSecret(auth.PersonalTokenPrefix)
	t, err := s.Store.CreateToken(ctx, userID, in.Name, prefix, hash, in.ExpiresAt(time.Now()))
	return t, plain, err
}

// UpdateProfile changes the account's name and email.
func (s *Service) UpdateProfile(ctx context.Context, userID int64, in ProfileInput) (db.User, error) {
	if problems := in.Validate(); len(problems) > 0 {
		return db.User{}, problems
	}
	u, err := s.Store.UpdateProfile(ctx, userID, in.Email, in.Name)
	if errors.Is(err, db.ErrConflict) {
		return db.User{}, validation.Field("email", "Another account uses this email.")
	}
	return u, err
}

// ChangePassword replaces the password after checking the current one;
// wrong guesses count towards the sign-in throttle. It ends the account's
// console sessions and returns the session generation the one that made
// the change moves to (see [db.Store.SetPasswordHash]).
func (s *Service) ChangePassword(ctx context.Context, user db.User, in PasswordInput, clientIP string) (sessionGeneration int64, err error) {
	if problems := in.Validate(); len(problems) > 0 {
		return 0, problems
	}
	err = s.Auth.Reauthenticate(ctx, user, in.Current, clientIP)
	if errors.Is(err, auth.ErrBadCredentials) {
		return 0, validation.Field("current_password", "This is not your current password.")
	} else if err != nil {
		return 0, err
	}
	hash, err := auth.HashPassword(in.New)
	if err != nil {
		return 0, err
	}
	return s.Store.SetPasswordHash(ctx, user.ID, hash)
}
