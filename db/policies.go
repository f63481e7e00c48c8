package db

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
)

// PolicyChannel is the PostgreSQL NOTIFY channel every policy write
// signals, with the organization's id as payload, so replicas drop the
// rules they compiled for it.
const PolicyChannel = "toolgate_policies"

// Policy is one stored policy rule, of an organization (WorkspaceID nil) or
// of one workspace, with the names its target and selector point at.
type Policy struct {
	ID                 int64     `db:"id"`
	OrgID              int64     `db:"org_id"`
	WorkspaceID        *int64    `db:"workspace_id"`
	TargetType         string    `db:"target_type"`
	TargetRole         *string   `db:"target_role"`
	TargetUserID       *int64    `db:"target_user_id"`
	TargetKeyID        *int64    `db:"target_key_id"`
	SelectorType       string    `db:"selector_type"`
	Selector           string    `db:"selector"`
	Condition          string    `db:"condition"`
	Effect             string    `db:"effect"`
	Position           int       `db:"position"`
	Enabled            bool      `db:"enabled"`
	Note               string    `db:"note"`
	ApprovalTTLSeconds int       `db:"approval_ttl_seconds"`
	AllowSelfApproval  bool      `db:"allow_self_approval"`
	CreatedBy          *int64    `db:"created_by"`
	CreatedAt          time.Time `db:"created_at"`
	UpdatedAt          time.Time `db:"updated_at"`

	// TargetUserEmail, TargetKeyName and SourceName name what the rule
	// points at, for lists; nil when it points at nothing (any more).
	TargetUserEmail *string `db:"target_user_email"`
	TargetKeyName   *string `db:"target_key_name"`
	SourceName      *string `db:"source_name"`
}

// PolicyFields are a rule's writable columns. Of the target fields only the
// one its TargetType uses is stored; the others are written as NULL.
type PolicyFields struct {
	TargetType         string
	TargetRole         string
	TargetUserID       int64
	TargetKeyID        int64
	SelectorType       string
	Selector           string
	Condition          string
	Effect             string
	Enabled            bool
	Note               string
	ApprovalTTLSeconds int
	AllowSelfApproval  bool
}

// targets returns the three target columns, NULL except the one in use.
func (f PolicyFields) targets() (role *string, userID, keyID *int64) {
	switch f.TargetType {
	case "role":
		role = &f.TargetRole
	case "user":
		userID = &f.TargetUserID
	case "key":
		keyID = &f.TargetKeyID
	}
	return role, userID, keyID
}

const policyColumns = `p.id, p.org_id, p.workspace_id, p.target_type, p.target_role, p.target_user_id, p.target_key_id,
	p.selector_type, p.selector, p.condition, p.effect, p.position, p.enabled, p.note, p.approval_ttl_seconds,
	p.allow_self_approval, p.created_by, p.created_at, p.updated_at,
	u.email AS target_user_email, k.name AS target_key_name, s.name AS source_name`

const policyFrom = ` FROM policies p
	LEFT JOIN users u ON u.id = p.target_user_id
	LEFT JOIN api_keys k ON k.id = p.target_key_id AND k.org_id = p.org_id
	LEFT JOIN sources s ON p.selector_type = 'source' AND s.id = p.selector AND s.org_id = p.org_id`

// Policies lists the rules of one level in order: the organization's
// (workspaceID nil) or one workspace's.
func (s *Store) Policies(ctx context.Context, orgID int64, workspaceID *int64) ([]Policy, error) {
	out := []Policy{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+policyColumns+policyFrom+`
		WHERE p.org_id = $1 AND p.workspace_id IS NOT DISTINCT FROM CAST($2 AS bigint)
		ORDER BY p.position, p.id`, orgID, workspaceID)
	return out, err
}

// PolicyRules lists, in one query, every rule a workspace's calls answer
// to: the organization's first, then the workspace's, each in order.
func (s *Store) PolicyRules(ctx context.Context, orgID, workspaceID int64) ([]Policy, error) {
	out := []Policy{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+policyColumns+policyFrom+`
		WHERE p.org_id = $1 AND (p.workspace_id IS NULL OR p.workspace_id = $2)
		ORDER BY p.workspace_id NULLS FIRST, p.position, p.id`, orgID, workspaceID)
	return out, err
}

// Policy loads one rule of a level; a rule of another level, workspace or
// organization is ErrNotFound.
func (s *Store) Policy(ctx context.Context, orgID int64, workspaceID *int64, id int64) (Policy, error) {
	return policyIn(ctx, s.db, orgID, workspaceID, id)
}

func policyIn(ctx context.Context, q sqlx.QueryerContext, orgID int64, workspaceID *int64, id int64) (Policy, error) {
	var p Policy
	err := sqlx.GetContext(ctx, q, &p, `SELECT `+policyColumns+policyFrom+`
		WHERE p.org_id = $1 AND p.workspace_id IS NOT DISTINCT FROM CAST($2 AS bigint) AND p.id = $3`, orgID, workspaceID, id)
	return p, translate(err)
}

// PolicyVersions returns the policy versions of an organization and of one
// of its workspaces, which every policy write bumps.
func (s *Store) PolicyVersions(ctx context.Context, orgID, workspaceID int64) (org, workspace int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT o.policy_version, w.policy_version
		FROM organizations o JOIN workspaces w ON w.org_id = o.id
		WHERE o.id = $1 AND w.id = $2`, orgID, workspaceID).Scan(&org, &workspace)
	return org, workspace, translate(err)
}

// inPolicyTx runs fn in a transaction that first bumps the level's policy
// version and then, when fn succeeds, notifies PolicyChannel. Bumping
// first locks the organization's or workspace's row, so two writes to one
// level run one after the other and positions stay unique. A workspace of
// another organization is ErrNotFound.
func (s *Store) inPolicyTx(ctx context.Context, orgID int64, workspaceID *int64, fn func(tx *sqlx.Tx) error) error {
	return s.gatewayChanged(orgID, s.InTx(ctx, func(tx *sqlx.Tx) error {
		var res sql.Result
		var err error
		if workspaceID == nil {
			res, err = tx.ExecContext(ctx, `UPDATE organizations SET policy_version = policy_version + 1 WHERE id = $1`, orgID)
		} else {
			res, err = tx.ExecContext(ctx, `UPDATE workspaces SET policy_version = policy_version + 1
				WHERE org_id = $1 AND id = $2`, orgID, *workspaceID)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return ErrNotFound
		}
		if err := fn(tx); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, PolicyChannel, strconv.FormatInt(orgID, 10))
		return err
	}))
}

// CreatePolicy adds a rule at the end of its level.
func (s *Store) CreatePolicy(ctx context.Context, orgID int64, workspaceID *int64, createdBy int64, f PolicyFields) (Policy, error) {
	var p Policy
	err := s.inPolicyTx(ctx, orgID, workspaceID, func(tx *sqlx.Tx) error {
		role, userID, keyID := f.targets()
		var id int64
		err := tx.GetContext(ctx, &id, `INSERT INTO policies (org_id, workspace_id, target_type, target_role, target_user_id,
			target_key_id, selector_type, selector, condition, effect, position, enabled, note, approval_ttl_seconds,
			allow_self_approval, created_by)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
				COALESCE((SELECT max(position) FROM policies WHERE org_id = $1 AND workspace_id IS NOT DISTINCT FROM CAST($2 AS bigint)), 0) + 1,
				$11, $12, $13, $14, NULLIF($15, CAST(0 AS bigint))
			RETURNING id`,
			orgID, workspaceID, f.TargetType, role, userID, keyID, f.SelectorType, f.Selector, f.Condition, f.Effect,
			f.Enabled, f.Note, f.ApprovalTTLSeconds, f.AllowSelfApproval, createdBy)
		if err != nil {
			return translate(err)
		}
		if p, err = policyIn(ctx, tx, orgID, workspaceID, id); err != nil {
			return err
		}
		return addAudit(ctx, tx, policyAudit(p, createdBy, "policy.created"))
	})
	return p, err
}

// policyAudit is a rule's audit event: where it sits and what it decides
// for whom. A condition is only said to be there: its text may compare
// arguments with values nobody should find in the audit.
func policyAudit(p Policy, actorID int64, action string) AuditEvent {
	return auditEvent(p.OrgID, p.WorkspaceID, actorID, action, "policy", strconv.FormatInt(p.ID, 10), map[string]any{
		"position": p.Position, "effect": p.Effect, "target_type": p.TargetType, "selector_type": p.SelectorType,
		"selector": p.Selector, "condition": p.Condition != "", "enabled": p.Enabled})
}

// UpdatePolicy rewrites a rule's fields; its position stays.
func (s *Store) UpdatePolicy(ctx context.Context, orgID int64, workspaceID *int64, id, actorID int64, f PolicyFields) (Policy, error) {
	var p Policy
	err := s.inPolicyTx(ctx, orgID, workspaceID, func(tx *sqlx.Tx) error {
		role, userID, keyID := f.targets()
		res, err := tx.ExecContext(ctx, `UPDATE policies SET target_type = $4, target_role = $5, target_user_id = $6,
			target_key_id = $7, selector_type = $8, selector = $9, condition = $10, effect = $11, enabled = $12, note = $13,
			approval_ttl_seconds = $14, allow_self_approval = $15, updated_at = now()
			WHERE org_id = $1 AND workspace_id IS NOT DISTINCT FROM CAST($2 AS bigint) AND id = $3`,
			orgID, workspaceID, id, f.TargetType, role, userID, keyID, f.SelectorType, f.Selector, f.Condition, f.Effect,
			f.Enabled, f.Note, f.ApprovalTTLSeconds, f.AllowSelfApproval)
		if err := oneRow(res, err); err != nil {
			return err
		}
		if p, err = policyIn(ctx, tx, orgID, workspaceID, id); err != nil {
			return err
		}
		return addAudit(ctx, tx, policyAudit(p, actorID, "policy.updated"))
	})
	return p, err
}

// SetPolicyEnabled turns a rule on or off.
func (s *Store) SetPolicyEnabled(ctx context.Context, orgID int64, workspaceID *int64, id, actorID int64, enabled bool) (Policy, error) {
	var p Policy
	err := s.inPolicyTx(ctx, orgID, workspaceID, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE policies SET enabled = $4, updated_at = now()
			WHERE org_id = $1 AND workspace_id IS NOT DISTINCT FROM CAST($2 AS bigint) AND id = $3`, orgID, workspaceID, id, enabled)
		if err := oneRow(res, err); err != nil {
			return err
		}
		if p, err = policyIn(ctx, tx, orgID, workspaceID, id); err != nil {
			return err
		}
		action := "policy.disabled"
		if enabled {
			action = "policy.enabled"
		}
		return addAudit(ctx, tx, policyAudit(p, actorID, action))
	})
	return p, err
}

// DeletePolicy removes a rule and closes the gap it leaves in the order.
func (s *Store) DeletePolicy(ctx context.Context, orgID int64, workspaceID *int64, id, actorID int64) error {
	return s.inPolicyTx(ctx, orgID, workspaceID, func(tx *sqlx.Tx) error {
		p, err := policyIn(ctx, tx, orgID, workspaceID, id)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM policies
			WHERE org_id = $1 AND workspace_id IS NOT DISTINCT FROM CAST($2 AS bigint) AND id = $3`, orgID, workspaceID, id)
		if err := oneRow(res, err); err != nil {
			return err
		}
		if err := renumberPolicies(ctx, tx, orgID, workspaceID); err != nil {
			return err
		}
		return addAudit(ctx, tx, policyAudit(p, actorID, "policy.deleted"))
	})
}

// renumberPolicies numbers a level's rules 1, 2, 3... in their order.
func renumberPolicies(ctx context.Context, tx *sqlx.Tx, orgID int64, workspaceID *int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE policies p SET position = o.n
		FROM (SELECT id, CAST(row_number() OVER (ORDER BY position, id) AS int) AS n FROM policies
			WHERE org_id = $1 AND workspace_id IS NOT DISTINCT FROM CAST($2 AS bigint)) o
		WHERE p.id = o.id AND p.position <> o.n`, orgID, workspaceID)
	return err
}

// MovePolicy swaps a rule with its neighbour above (up) or below. A rule
// already first (or last) stays where it is.
func (s *Store) MovePolicy(ctx context.Context, orgID int64, workspaceID *int64, id, actorID int64, up bool) (Policy, error) {
	var p Policy
	err := s.inPolicyTx(ctx, orgID, workspaceID, func(tx *sqlx.Tx) error {
		if err := renumberPolicies(ctx, tx, orgID, workspaceID); err != nil {
			return err
		}
		cur, err := policyIn(ctx, tx, orgID, workspaceID, id)
		if err != nil {
			return err
		}
		other := cur.Position + 1
		if up {
			other = cur.Position - 1
		}
		res, err := tx.ExecContext(ctx, `UPDATE policies SET position = $3, updated_at = now()
			WHERE org_id = $1 AND workspace_id IS NOT DISTINCT FROM CAST($2 AS bigint) AND position = $4`,
			orgID, workspaceID, cur.Position, other)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			p = cur // no neighbour on that side
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE policies SET position = $2, updated_at = now() WHERE id = $1`, id, other); err != nil {
			return err
		}
		if p, err = policyIn(ctx, tx, orgID, workspaceID, id); err != nil {
			return err
		}
		return addAudit(ctx, tx, policyAudit(p, actorID, "policy.moved"))
	})
	return p, err
}

// PolicyKeys lists the live API keys a rule of a level may target: the
// workspace's, or for an organization rule every workspace's.
func (s *Store) PolicyKeys(ctx context.Context, orgID int64, workspaceID *int64) ([]APIKey, error) {
	ks := []APIKey{}
	err := s.db.SelectContext(ctx, &ks, `SELECT `+apiKeyColumns+` FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.org_id = $1 AND (CAST($2 AS bigint) IS NULL OR k.workspace_id = $2) AND k.revoked_at IS NULL
		ORDER BY lower(k.name), k.id`, orgID, workspaceID)
	return ks, err
}

// PolicyKey loads a live API key a rule of a level may target.
func (s *Store) PolicyKey(ctx context.Context, orgID int64, workspaceID *int64, id int64) (APIKey, error) {
	var k APIKey
	err := s.db.GetContext(ctx, &k, `SELECT `+apiKeyColumns+` FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.org_id = $1 AND (CAST($2 AS bigint) IS NULL OR k.workspace_id = $2) AND k.id = $3 AND k.revoked_at IS NULL`,
		orgID, workspaceID, id)
	return k, translate(err)
}

// ToolPaths lists the paths of the tools a workspace sees, for the
// simulator's suggestions.
func (s *Store) ToolPaths(ctx context.Context, orgID, workspaceID int64) ([]string, error) {
	out := []string{}
	err := s.db.SelectContext(ctx, &out, `SELECT t.path FROM sources s JOIN source_tools t ON t.source_id = s.id
		WHERE s.org_id = $1 AND (s.workspace_id IS NULL OR s.workspace_id = $2) AND s.enabled
		ORDER BY t.path LIMIT 2000`, orgID, workspaceID)
	return out, err
}
