package db

import (
	"context"
	"strconv"
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

// CreateWorkspace inserts a workspace and its workspace.created audit
// event by actorID (0 for toolgate itself).
func (s *Store) CreateWorkspace(ctx context.Context, orgID int64, slug, name string, actorID int64) (Workspace, error) {
	var w Workspace
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if w, err = CreateWorkspace(ctx, tx, orgID, slug, name); err != nil {
			return err
		}
		return addAudit(ctx, tx, workspaceAudit(w, &w.ID, actorID, "workspace.created"))
	})
	return w, err
}

// workspaceAudit is a workspace's audit event: its name and URL name. A
// deleted workspace's event is the organization's (workspaceID nil), as
// its events' workspace goes with it.
func workspaceAudit(w Workspace, workspaceID *int64, actorID int64, action string) AuditEvent {
	return auditEvent(w.OrgID, workspaceID, actorID, action, "workspace", strconv.FormatInt(w.ID, 10),
		map[string]string{"name": w.Name, "slug": w.Slug})
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
func (s *Store) UpdateWorkspace(ctx context.Context, orgID, id int64, slug, name string, actorID int64) (Workspace, error) {
	var w Workspace
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &w, `UPDATE workspaces SET slug = $3, name = $4, updated_at = now()
			WHERE org_id = $1 AND id = $2 RETURNING `+workspaceColumns, orgID, id, slug, name); err != nil {
			return translate(err)
		}
		return addAudit(ctx, tx, workspaceAudit(w, &w.ID, actorID, "workspace.updated"))
	})
	return w, err
}

// DeleteWorkspace removes a workspace, and records who did (actorID).
func (s *Store) DeleteWorkspace(ctx context.Context, orgID, id, actorID int64) error {
	return s.InTx(ctx, func(tx *sqlx.Tx) error {
		var w Workspace
		if err := tx.GetContext(ctx, &w, `DELETE FROM workspaces WHERE org_id = $1 AND id = $2 RETURNING `+workspaceColumns, orgID, id); err != nil {
			return translate(err)
		}
		return addAudit(ctx, tx, workspaceAudit(w, nil, actorID, "workspace.deleted"))
	})
}
