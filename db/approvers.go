package db

import (
	"context"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
)

// Approver is a member given a workspace's approver role: beside the
// organization's owners and admins, they decide its approval requests.
type Approver struct {
	UserID int64  `db:"user_id"`
	Email  string `db:"email"`
	Name   string `db:"name"`
	// Role is the user's current role in the organization; an approver
	// demoted to viewer stays listed but cannot decide.
	Role      string    `db:"role"`
	AddedBy   *string   `db:"added_by"`
	CreatedAt time.Time `db:"created_at"`
}

// Approvers lists a workspace's approvers by email.
func (s *Store) Approvers(ctx context.Context, orgID, workspaceID int64) ([]Approver, error) {
	out := []Approver{}
	err := s.db.SelectContext(ctx, &out, `SELECT a.user_id, u.email, u.name, m.role, b.email AS added_by, a.created_at
		FROM workspace_approvers a
		JOIN users u ON u.id = a.user_id
		JOIN memberships m ON m.org_id = a.org_id AND m.user_id = a.user_id
		LEFT JOIN users b ON b.id = a.added_by
		WHERE a.org_id = $1 AND a.workspace_id = $2
		ORDER BY lower(u.email)`, orgID, workspaceID)
	return out, err
}

// AddApprover gives a member the workspace's approver role and records who
// did. Only a member whose role is member qualifies: the insert checks the
// role in the same statement, so a concurrent role change cannot slip a
// viewer in; anyone else is ErrNotFound (callers check the role first to
// say why). Adding an approver again changes nothing.
func (s *Store) AddApprover(ctx context.Context, orgID, workspaceID, userID, actorID int64) error {
	return s.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO workspace_approvers (workspace_id, user_id, org_id, added_by)
			SELECT w.id, m.user_id, m.org_id, NULLIF($4, 0)
			FROM memberships m JOIN workspaces w ON w.org_id = m.org_id
			WHERE m.org_id = $1 AND w.id = $2 AND m.user_id = $3 AND m.role = 'member'
			ON CONFLICT (workspace_id, user_id) DO NOTHING`, orgID, workspaceID, userID, actorID)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var exists bool
			if err := tx.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM workspace_approvers
				WHERE org_id = $1 AND workspace_id = $2 AND user_id = $3)`, orgID, workspaceID, userID); err != nil {
				return err
			}
			if !exists {
				return ErrNotFound
			}
			return nil
		}
		return addAudit(ctx, tx, approverAudit(orgID, workspaceID, userID, actorID, "approver.added"))
	})
}

// RemoveApprover takes the approver role away; a user without it is ErrNotFound.
func (s *Store) RemoveApprover(ctx context.Context, orgID, workspaceID, userID, actorID int64) error {
	return s.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM workspace_approvers
			WHERE org_id = $1 AND workspace_id = $2 AND user_id = $3`, orgID, workspaceID, userID)
		if err := oneRow(res, err); err != nil {
			return err
		}
		return addAudit(ctx, tx, approverAudit(orgID, workspaceID, userID, actorID, "approver.removed"))
	})
}

func approverAudit(orgID, workspaceID, userID, actorID int64, action string) AuditEvent {
	return auditEvent(orgID, &workspaceID, actorID, action, "user", strconv.FormatInt(userID, 10), map[string]int64{"user_id": userID})
}

// ApprovalRule is the policy rule that held a request, as its card names
// and links it.
type ApprovalRule struct {
	ID int64 `db:"id"`
	// WorkspaceID is nil for an organization rule.
	WorkspaceID *int64 `db:"workspace_id"`
	Position    int    `db:"position"`
	Note        string `db:"note"`
}

// ApprovalRules loads an organization's rules by id, for the requests they
// held; ids of deleted rules are simply absent.
func (s *Store) ApprovalRules(ctx context.Context, orgID int64, ids []int64) (map[int64]ApprovalRule, error) {
	out := map[int64]ApprovalRule{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []ApprovalRule
	if err := s.db.SelectContext(ctx, &rows, `SELECT id, workspace_id, position, note
		FROM policies WHERE org_id = $1 AND id = ANY($2)`, orgID, ids); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}
