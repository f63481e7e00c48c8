package tenancy

import (
	"context"
	"strings"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/validation"
)

// API key modes: the tool surface an agent sees through the key.
const (
	// ModeSearch offers meta-tools to search, describe and call tools.
	ModeSearch = "search"
	// ModeDirect lists every registry tool as its own MCP tool.
	ModeDirect = "direct"
)

// Modes lists the API key modes, the default first.
var Modes = []string{ModeSearch, ModeDirect}

// APIKeyInput creates a workspace API key that acts as its creator.
type APIKeyInput struct {
	Name string `json:"name" form:"name"`
	// Mode is search (the default when empty) or direct.
	Mode string `json:"mode" form:"mode"`
	// ExpiresInDays is 0 for a key that never expires.
	ExpiresInDays int `json:"expires_in_days" form:"expires_in_days"`
}

// Validate checks every field and fills in the default mode.
func (in *APIKeyInput) Validate() validation.Errors {
	in.Name, in.Mode = strings.TrimSpace(in.Name), strings.TrimSpace(in.Mode)
	if in.Mode == "" {
		in.Mode = ModeSearch
	}
	e := validation.Errors{}
	e.Name("name", in.Name, validation.MaxNameLen)
	if in.Mode != ModeSearch && in.Mode != ModeDirect {
		e.Add("mode", "Choose search or direct.")
	}
	if in.ExpiresInDays < 0 || in.ExpiresInDays > MaxTokenDays {
		e.Add("expires_in_days", "Choose between 1 and 366 days, or 0 for no expiry.")
	}
	return e
}

// ExpiresAt is when the key stops working, or nil.
func (in APIKeyInput) ExpiresAt(now time.Time) *time.Time {
	return TokenInput{ExpiresInDays: in.ExpiresInDays}.ExpiresAt(now)
}

// CanCreateAPIKey reports whether a role may create keys; a key always acts
// as the person who creates it, so members and above may.
func CanCreateAPIKey(role auth.Role) bool { return role.AtLeast(auth.Member) }

// CanRevokeAPIKey reports whether someone with role may revoke k: owners
// and admins revoke any key of the workspace, members their own.
func CanRevokeAPIKey(userID int64, role auth.Role, k db.APIKey) bool {
	return role.AtLeast(auth.Admin) || role.AtLeast(auth.Member) && k.UserID == userID
}

// CreateAPIKey issues a key in a workspace, owned by the creating user, and
// returns it with its one-time value.
func (s *Service) CreateAPIKey(ctx context.Context, ws db.Workspace, by db.User, role auth.Role, in APIKeyInput) (db.APIKey, string, error) {
	if !CanCreateAPIKey(role) {
		return db.APIKey{}, "", auth.ErrForbidden
	}
	if problems := in.Validate(); len(problems) > 0 {
		return db.APIKey{}, "", problems
	}
	plain, hash, prefix := auth.NewSecret(auth.APIKeyPrefix)
	k, err := s.Store.CreateAPIKey(ctx, db.NewAPIKey{OrgID: ws.OrgID, WorkspaceID: ws.ID, UserID: by.ID,
		Name: in.Name, Prefix: prefix, Mode: in.Mode, Hash: hash, CreatedBy: by.ID, ExpiresAt: in.ExpiresAt(time.Now())})
	return k, plain, err
}

// RevokeAPIKey ends one of a workspace's keys at once. A key the caller may
// not revoke is ErrForbidden; one of another workspace is ErrNotFound.
func (s *Service) RevokeAPIKey(ctx context.Context, ws db.Workspace, by db.User, role auth.Role, id int64) error {
	k, err := s.Store.APIKeyByID(ctx, ws.OrgID, ws.ID, id)
	if err != nil {
		return err
	}
	if !CanRevokeAPIKey(by.ID, role, k) {
		return auth.ErrForbidden
	}
	return s.Store.RevokeAPIKey(ctx, ws.OrgID, ws.ID, id, by.ID)
}
