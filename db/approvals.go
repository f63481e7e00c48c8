package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
)

// ApprovalsChannel is the PostgreSQL NOTIFY channel of approval changes.
// Each payload is "<org_id>:<workspace_id>:<id>:<status>", sent in the
// transaction that made the change.
const ApprovalsChannel = "toolgate_approvals"

// Approval is a tool call held for a person's decision, as pages show it:
// the redacted arguments only, with the caller's and the decider's names
// joined. The sealed arguments and result never leave this package but
// through [Store.ClaimApproval] and [Store.ApprovalResult].
type Approval struct {
	ID                string          `db:"id"`
	OrgID             int64           `db:"org_id"`
	WorkspaceID       int64           `db:"workspace_id"`
	Tool              string          `db:"tool"`
	SourceID          string          `db:"source_id"`
	ArgumentsRedacted json.RawMessage `db:"arguments_redacted"`
	KeyID             *int64          `db:"key_id"`
	KeyName           string          `db:"key_name"`
	UserID            *int64          `db:"user_id"`
	UserEmail         string          `db:"user_email"`
	UserName          string          `db:"user_name"`
	Via               string          `db:"via"`
	PolicyID          *int64          `db:"policy_id"`
	Reason            string          `db:"reason"`
	AllowSelfApproval bool            `db:"allow_self_approval"`
	Status            string          `db:"status"`
	RequestedAt       time.Time       `db:"requested_at"`
	ExpiresAt         time.Time       `db:"expires_at"`
	DecidedAt         *time.Time      `db:"decided_at"`
	DecidedBy         *int64          `db:"decided_by"`
	DecidedByEmail    string          `db:"decided_by_email"`
	Comment           string          `db:"comment"`
	// ExecutedAt is when execution began while the status is executing,
	// and when it ended once executed.
	ExecutedAt *time.Time `db:"executed_at"`
}

// SealedValue is an encrypted value as an approval row stores it.
type SealedValue struct {
	KeyID      string `db:"key_id"`
	Nonce      []byte `db:"nonce"`
	Ciphertext []byte `db:"ciphertext"`
}

// NewApproval is what holding a call writes.
type NewApproval struct {
	ID                 string
	OrgID, WorkspaceID int64
	Tool, SourceID     string
	Arguments          SealedValue
	Redacted           json.RawMessage
	// The caller: a key and its owner, or a console user.
	KeyID, UserID *int64
	Via           string
	// PolicyID is nil when the tool's default held the call.
	PolicyID          *int64
	Reason            string
	AllowSelfApproval bool
	TTL               time.Duration
}

// ApprovalRef names one approval row, for the periodic sweeps.
type ApprovalRef struct {
	OrgID       int64  `db:"org_id"`
	WorkspaceID int64  `db:"workspace_id"`
	ID          string `db:"id"`
}

const approvalSelect = `SELECT a.id, a.org_id, a.workspace_id, a.tool, a.source_id, a.arguments_redacted,
	a.key_id, COALESCE(k.name, '') AS key_name, a.user_id, COALESCE(u.email, '') AS user_email,
	COALESCE(u.name, '') AS user_name, a.via, a.policy_id, a.reason, a.allow_self_approval, a.status,
	a.requested_at, a.expires_at, a.decided_at, a.decided_by, COALESCE(d.email, '') AS decided_by_email,
	a.comment, a.executed_at
	FROM approvals a
	LEFT JOIN api_keys k ON k.id = a.key_id
	LEFT JOIN users u ON u.id = a.user_id
	LEFT JOIN users d ON d.id = a.decided_by`

// notifyApproval announces a change on [ApprovalsChannel] when tx commits.
func notifyApproval(ctx context.Context, tx *sqlx.Tx, orgID, workspaceID int64, id, status string) error {
	payload := strconv.FormatInt(orgID, 10) + ":" + strconv.FormatInt(workspaceID, 10) + ":" + id + ":" + status
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, ApprovalsChannel, payload)
	return err
}

// notifyEach is the tail of a statement whose CTE "c" returns changed
// rows: one notification per row with the given status.
func notifyEach(status string) string {
	return `SELECT pg_notify('` + ApprovalsChannel + `', c.org_id || ':' || c.workspace_id || ':' || c.id || ':` + status + `') FROM c`
}

// CreateApproval stores a pending approval, expiring TTL after now by the
// database's clock, and announces it.
func (s *Store) CreateApproval(ctx context.Context, in NewApproval) (Approval, error) {
	redacted := in.Redacted
	if len(redacted) == 0 {
		redacted = json.RawMessage(`{}`)
	}
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO approvals (id, org_id, workspace_id, tool, source_id,
				arguments_sealed, arguments_nonce, arguments_key_id, arguments_redacted, key_id, user_id, via,
				policy_id, reason, allow_self_approval, status, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 'pending',
				now() + make_interval(secs => $16))`,
			in.ID, in.OrgID, in.WorkspaceID, in.Tool, in.SourceID, in.Arguments.Ciphertext, in.Arguments.Nonce,
			in.Arguments.KeyID, redacted, in.KeyID, in.UserID, in.Via, in.PolicyID, in.Reason, in.AllowSelfApproval,
			in.TTL.Seconds())
		if err != nil {
			return translate(err)
		}
		return notifyApproval(ctx, tx, in.OrgID, in.WorkspaceID, in.ID, "pending")
	})
	if err != nil {
		return Approval{}, err
	}
	return s.Approval(ctx, in.OrgID, in.ID)
}

// Approval loads one approval of an organization; another organization's
// id is ErrNotFound.
func (s *Store) Approval(ctx context.Context, orgID int64, id string) (Approval, error) {
	var a Approval
	err := s.db.GetContext(ctx, &a, approvalSelect+` WHERE a.org_id = $1 AND a.id = $2`, orgID, id)
	return a, translate(err)
}

// Approvals lists a workspace's approvals, newest first, optionally of one
// status.
func (s *Store) Approvals(ctx context.Context, orgID, workspaceID int64, status string, limit int) ([]Approval, error) {
	out := []Approval{}
	err := s.db.SelectContext(ctx, &out, approvalSelect+`
		WHERE a.org_id = $1 AND a.workspace_id = $2 AND ($3 = '' OR a.status = $3)
		ORDER BY a.requested_at DESC, a.id LIMIT $4`, orgID, workspaceID, status, limit)
	return out, err
}

// PendingApprovalCount counts a workspace's pending approvals that have not
// yet expired.
func (s *Store) PendingApprovalCount(ctx context.Context, orgID, workspaceID int64) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, `SELECT count(*) FROM approvals
		WHERE org_id = $1 AND workspace_id = $2 AND status = 'pending' AND expires_at > now()`, orgID, workspaceID)
	return n, err
}

// DecideApproval moves a pending, unexpired approval of a workspace to
// status (approved or denied) and writes audit in the same transaction.
// It reports false, writing nothing, when the row was not pending, had
// expired or is not there.
func (s *Store) DecideApproval(ctx context.Context, orgID, workspaceID int64, id, status string, deciderID int64, comment string, audit AuditEvent) (bool, error) {
	decided := false
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = $4, decided_at = now(), decided_by = $5, comment = $6
			WHERE org_id = $1 AND workspace_id = $2 AND id = $3 AND status = 'pending' AND expires_at > now()`,
			orgID, workspaceID, id, status, deciderID, comment)
		if err != nil {
			return translate(err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		decided = true
		if err := addAudit(ctx, tx, audit); err != nil {
			return fmt.Errorf("audit decision: %w", err)
		}
		return notifyApproval(ctx, tx, orgID, workspaceID, id, status)
	})
	return decided && err == nil, err
}

// ExpireApproval marks one approval expired if it is pending past its
// expiry, reporting whether it did.
func (s *Store) ExpireApproval(ctx context.Context, orgID int64, id string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `WITH c AS (
			UPDATE approvals SET status = 'expired'
			WHERE org_id = $1 AND id = $2 AND status IN ('pending', 'approved') AND expires_at <= now()
			RETURNING org_id, workspace_id, id)
		`+notifyEach("expired"), orgID, id)
	return affectedAny(res, err)
}

// ExpireWorkspaceApprovals marks a workspace's overdue pending approvals
// expired, returning how many it marked.
func (s *Store) ExpireWorkspaceApprovals(ctx context.Context, orgID, workspaceID int64) (int64, error) {
	res, err := s.db.ExecContext(ctx, `WITH c AS (
			UPDATE approvals SET status = 'expired'
			WHERE org_id = $1 AND workspace_id = $2 AND status IN ('pending', 'approved') AND expires_at <= now()
			RETURNING org_id, workspace_id, id)
		`+notifyEach("expired"), orgID, workspaceID)
	return rowsChanged(res, err)
}

// ExpireApprovals marks every organization's overdue pending approvals,
// and approved ones nobody ran before their expiry, expired, returning how many it marked. It is the periodic sweep, the one
// approvals query not scoped to an organization.
func (s *Store) ExpireApprovals(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, `WITH c AS (
			UPDATE approvals SET status = 'expired'
			WHERE status IN ('pending', 'approved') AND expires_at <= now()
			RETURNING org_id, workspace_id, id)
		`+notifyEach("expired"))
	return rowsChanged(res, err)
}

// ClaimApproval moves an approved approval to executing and returns its
// sealed arguments. Only one caller ever gets claimed = true: the update is
// conditional on the status, so every other replica or retry gets false.
func (s *Store) ClaimApproval(ctx context.Context, orgID int64, id string) (args SealedValue, claimed bool, err error) {
	err = s.InTx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			SealedValue
			WorkspaceID int64 `db:"workspace_id"`
		}
		err := tx.GetContext(ctx, &row, `UPDATE approvals SET status = 'executing', executed_at = now()
			WHERE org_id = $1 AND id = $2 AND status = 'approved'
			RETURNING workspace_id, arguments_key_id AS key_id, arguments_nonce AS nonce, arguments_sealed AS ciphertext`,
			orgID, id)
		if err != nil {
			return translate(err)
		}
		args, claimed = row.SealedValue, true
		return notifyApproval(ctx, tx, orgID, row.WorkspaceID, id, "executing")
	})
	if !claimed && errors.Is(err, ErrNotFound) {
		err = nil
	}
	return args, claimed, err
}

// FinishApproval stores the sealed result of an executing approval and
// marks it executed. A row that is not executing is ErrNotFound.
func (s *Store) FinishApproval(ctx context.Context, orgID int64, id string, result SealedValue) error {
	res, err := s.db.ExecContext(ctx, `WITH c AS (
			UPDATE approvals SET status = 'executed', executed_at = now(),
				result_key_id = $3, result_nonce = $4, result_sealed = $5
			WHERE org_id = $1 AND id = $2 AND status = 'executing'
			RETURNING org_id, workspace_id, id)
		`+notifyEach("executed"), orgID, id, result.KeyID, result.Nonce, result.Ciphertext)
	return oneRow(res, err)
}

// StuckApprovals lists approvals of every organization that began
// executing more than olderThan ago and never finished: the replica that
// claimed them stopped. It is a periodic sweep.
func (s *Store) StuckApprovals(ctx context.Context, olderThan time.Duration, limit int) ([]ApprovalRef, error) {
	out := []ApprovalRef{}
	err := s.db.SelectContext(ctx, &out, `SELECT org_id, workspace_id, id FROM approvals
		WHERE status = 'executing' AND executed_at < now() - make_interval(secs => $1)
		ORDER BY executed_at LIMIT $2`, olderThan.Seconds(), limit)
	return out, err
}

// FailStuckApproval finishes one stuck approval with a sealed result,
// reporting false when it is no longer stuck (it finished meanwhile, or
// another replica's sweep got there first).
func (s *Store) FailStuckApproval(ctx context.Context, orgID int64, id string, olderThan time.Duration, result SealedValue) (bool, error) {
	res, err := s.db.ExecContext(ctx, `WITH c AS (
			UPDATE approvals SET status = 'executed', executed_at = now(),
				result_key_id = $4, result_nonce = $5, result_sealed = $6
			WHERE org_id = $1 AND id = $2 AND status = 'executing' AND executed_at < now() - make_interval(secs => $3)
			RETURNING org_id, workspace_id, id)
		`+notifyEach("executed"), orgID, id, olderThan.Seconds(), result.KeyID, result.Nonce, result.Ciphertext)
	return affectedAny(res, err)
}

// ApprovalResult returns the sealed result of an executed approval;
// ErrNotFound before it is executed.
func (s *Store) ApprovalResult(ctx context.Context, orgID int64, id string) (SealedValue, error) {
	var v SealedValue
	err := s.db.GetContext(ctx, &v, `SELECT result_key_id AS key_id, result_nonce AS nonce, result_sealed AS ciphertext
		FROM approvals WHERE org_id = $1 AND id = $2 AND status = 'executed' AND result_sealed IS NOT NULL`, orgID, id)
	return v, translate(err)
}

// IsApprover reports whether a user holds the approver role of a workspace.
func (s *Store) IsApprover(ctx context.Context, orgID, workspaceID, userID int64) (bool, error) {
	var ok bool
	err := s.db.GetContext(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM workspace_approvers
		WHERE org_id = $1 AND workspace_id = $2 AND user_id = $3)`, orgID, workspaceID, userID)
	return ok, err
}

// affected reports whether an Exec changed any row.
func affectedAny(res sql.Result, err error) (bool, error) {
	n, err := rowsChanged(res, err)
	return n > 0, err
}

// count is the number of rows an Exec changed.
func rowsChanged(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, translate(err)
	}
	return res.RowsAffected()
}
