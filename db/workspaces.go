package db

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// Workspace is a team's space inside an organization.
type Workspace struct {
	ID        int64     `db:"id" json:"id"`
	OrgID     int64     `db:"org_id" json:"-"`
	Slug      string    `db:"slug" json:"slug"`
	Name      string    `db:"name" json:"name"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
	UpdatedAt time.Time `db:"updated_at" json:"updated_at"`
}

const workspaceColumns = `id, org_id, slug, name, created_at, updated_at`

// CreateWorkspace inserts a workspace; a taken slug or name is ErrConflict.
func CreateWorkspace(ctx context.Context, q sqlx.QueryerContext, orgID int64, slug, name string) (Workspace, error) {
	var w Workspace
	err := sqlx.GetContext(ctx, q, &w, `INSERT INTO workspaces (org_id, slug, name) VALUES ($1, $2, $3)
		RETURNING `+workspaceColumns, orgID, slug, name)
	return w, translate(err)
}

// CreateWorkspace inserts a workspace outside a transaction.
func (s *Store) CreateWorkspace(ctx context.Context, orgID int64, slug, name string) (Workspace, error) {
	return CreateWorkspace(ctx, s.db, orgID, slug, name)
}

// Workspaces lists an organization's workspaces by name.
func (s *Store) Workspaces(ctx context.Context, orgID int64) ([]Workspace, error) {
	ws := []Workspace{}
	err := s.db.SelectContext(ctx, &ws, `SELECT `+workspaceColumns+` FROM workspaces
		WHERE org_id = $1 ORDER BY lower(name), id`, orgID)
	return ws, err
}

// WorkspaceBySlug loads one of an organization's workspaces.
func (s *Store) WorkspaceBySlug(ctx context.Context, orgID int64, slug string) (Workspace, error) {
	var w Workspace
	err := s.db.GetContext(ctx, &w, `SELECT `+workspaceColumns+` FROM workspaces
		WHERE org_id = $1 AND slug = $2`, orgID, slug)
	return w, translate(err)
}

// WorkspaceSlugTaken reports whether the organization already uses slug.
func (s *Store) WorkspaceSlugTaken(ctx context.Context, orgID int64, slug string, exceptID int64) (bool, error) {
	var taken bool
	err := s.db.GetContext(ctx, &taken, `SELECT EXISTS (SELECT 1 FROM workspaces
		WHERE org_id = $1 AND slug = $2 AND id <> $3)`, orgID, slug, exceptID)
	return taken, err
}

// UpdateWorkspace renames a workspace and may change its slug.
func (s *Store) UpdateWorkspace(ctx context.Context, orgID, id int64, slug, name string) (Workspace, error) {
	var w Workspace
	err := s.db.GetContext(ctx, &w, `UPDATE workspaces SET slug = $3, name = $4, updated_at = now()
		WHERE org_id = $1 AND id = $2 RETURNING `+workspaceColumns, orgID, id, slug, name)
	return w, translate(err)
}

// DeleteWorkspace removes a workspace.
func (s *Store) DeleteWorkspace(ctx context.Context, orgID, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM workspaces WHERE org_id = $1 AND id = $2`, orgID, id)
	return oneRow(res, err)
}
