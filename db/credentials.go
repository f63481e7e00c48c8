package db

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"
)

// Credential is a sealed secret bound to a source. The sealed fields never
// leave the server: they carry json:"-".
type Credential struct {
	ID          string          `db:"id"`
	OrgID       int64           `db:"org_id"`
	SourceID    string          `db:"source_id"`
	Scope       string          `db:"scope"`
	WorkspaceID *int64          `db:"workspace_id"`
	UserID      *int64          `db:"user_id"`
	Auth        json.RawMessage `db:"auth"`
	KeyID       string          `db:"key_id" json:"-"`
	Nonce       []byte          `db:"nonce" json:"-"`
	Ciphertext  []byte          `db:"ciphertext" json:"-"`
	Hint        string          `db:"hint"`
	CreatedBy   *int64          `db:"created_by"`
	UpdatedBy   *int64          `db:"updated_by"`
	CreatedAt   time.Time       `db:"created_at"`
	UpdatedAt   time.Time       `db:"updated_at"`
	LastUsedAt  *time.Time      `db:"last_used_at"`

	// Joined for pages.
	OrgSlug             string  `db:"org_slug"`
	SourceName          string  `db:"source_name"`
	SourceSlug          string  `db:"source_slug"`
	SourceType          string  `db:"source_type"`
	SourceWorkspaceID   *int64  `db:"source_workspace_id"`
	SourceWorkspaceSlug *string `db:"source_workspace_slug"`
	WorkspaceSlug       *string `db:"workspace_slug"`
	WorkspaceName       *string `db:"workspace_name"`
	CreatedByName       *string `db:"created_by_name"`
	UpdatedByName       *string `db:"updated_by_name"`
}

const credentialSelect = `SELECT c.id, c.org_id, c.source_id, c.scope, c.workspace_id, c.user_id, c.auth, c.key_id,
	c.nonce, c.ciphertext, c.hint, c.created_by, c.updated_by, c.created_at, c.updated_at, c.last_used_at,
	o.slug AS org_slug, s.name AS source_name, s.slug AS source_slug, s.type AS source_type,
	s.workspace_id AS source_workspace_id, sw.slug AS source_workspace_slug,
	w.slug AS workspace_slug, w.name AS workspace_name, COALESCE(NULLIF(cu.name, ''), cu.email) AS created_by_name, COALESCE(NULLIF(uu.name, ''), uu.email) AS updated_by_name
	FROM credentials c
	JOIN organizations o ON o.id = c.org_id
	JOIN sources s ON s.id = c.source_id
	LEFT JOIN workspaces sw ON sw.id = s.workspace_id
	LEFT JOIN workspaces w ON w.id = c.workspace_id
	LEFT JOIN users cu ON cu.id = c.created_by
	LEFT JOIN users uu ON uu.id = c.updated_by`

// NewCredential is what creating a credential writes.
type NewCredential struct {
	ID          string
	OrgID       int64
	SourceID    string
	Scope       string
	WorkspaceID *int64
	UserID      *int64
	Auth        json.RawMessage
	KeyID       string
	Nonce       []byte
	Ciphertext  []byte
	Hint        string
	ActorID     int64
}

// AuditEvent records who changed what; Details never hold a secret.
type AuditEvent struct {
	ID          int64           `db:"id" json:"id"`
	OrgID       int64           `db:"org_id" json:"-"`
	WorkspaceID *int64          `db:"workspace_id" json:"workspace_id"`
	ActorID     *int64          `db:"actor_id" json:"actor_id"`
	Action      string          `db:"action" json:"action"`
	TargetType  string          `db:"target_type" json:"target_type"`
	TargetID    string          `db:"target_id" json:"target_id"`
	Details     json.RawMessage `db:"details" json:"details"`
	CreatedAt   time.Time       `db:"created_at" json:"created_at"`
}

const insertAudit = `INSERT INTO audit_events (org_id, workspace_id, actor_id, action, target_type, target_id, details)
	VALUES ($1, $2, $3, $4, $5, $6, $7)`

func addAudit(ctx context.Context, tx *sqlx.Tx, e AuditEvent) error {
	_, err := tx.ExecContext(ctx, insertAudit, e.args()...)
	return err
}

// addAuditPgx is addAudit in a pgx transaction.
func addAuditPgx(ctx context.Context, tx pgx.Tx, e AuditEvent) error {
	_, err := tx.Exec(ctx, insertAudit, e.args()...)
	return err
}

func (e AuditEvent) args() []any {
	if len(e.Details) == 0 {
		e.Details = json.RawMessage(`{}`)
	}
	return []any{e.OrgID, e.WorkspaceID, e.ActorID, e.Action, e.TargetType, e.TargetID, e.Details}
}

// AuditEvents lists an organization's newest events first.
func (s *Store) AuditEvents(ctx context.Context, orgID int64, limit int) ([]AuditEvent, error) {
	out := []AuditEvent{}
	err := s.db.SelectContext(ctx, &out, `SELECT id, org_id, workspace_id, actor_id, action, target_type, target_id, details, created_at
		FROM audit_events WHERE org_id = $1 ORDER BY id DESC LIMIT $2`, orgID, limit)
	return out, err
}

// CreateCredential stores a sealed credential and its audit event in one
// transaction. A second credential for the same source and holder is
// ErrConflict.
func (s *Store) CreateCredential(ctx context.Context, in NewCredential, audit AuditEvent) (Credential, error) {
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO credentials (id, org_id, source_id, scope, workspace_id, user_id, auth,
				key_id, nonce, ciphertext, hint, created_by, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULLIF($12, 0), NULLIF($12, 0))`,
			in.ID, in.OrgID, in.SourceID, in.Scope, in.WorkspaceID, in.UserID, in.Auth, in.KeyID, in.Nonce, in.Ciphertext, in.Hint, in.ActorID)
		if err != nil {
			return translate(err)
		}
		return addAudit(ctx, tx, audit)
	})
	if err := s.gatewayChanged(in.OrgID, err); err != nil {
		return Credential{}, err
	}
	return s.Credential(ctx, in.OrgID, in.ID)
}

// Credential loads one credential of an organization.
func (s *Store) Credential(ctx context.Context, orgID int64, id string) (Credential, error) {
	var c Credential
	err := s.db.GetContext(ctx, &c, credentialSelect+` WHERE c.org_id = $1 AND c.id = $2`, orgID, id)
	return c, translate(err)
}

// CredentialFilter narrows a listing; zero fields do not filter.
type CredentialFilter struct {
	// ViewerID sees account credentials of their own only; always set.
	ViewerID int64
	// VisibleIn keeps the credentials that apply in one workspace: of
	// sources it sees, and not another workspace's.
	VisibleIn *int64
	Scope     string
	SourceID  string
}

// Credentials lists an organization's credentials, by source name then scope.
func (s *Store) Credentials(ctx context.Context, orgID int64, f CredentialFilter) ([]Credential, error) {
	where := ` WHERE c.org_id = $1 AND (c.scope <> 'account' OR c.user_id = $2)`
	args := []any{orgID, f.ViewerID}
	add := func(cond string, v any) {
		args = append(args, v)
		where += " AND " + strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args)))
	}
	if f.VisibleIn != nil {
		add("(s.workspace_id IS NULL OR s.workspace_id = $?) AND (c.workspace_id IS NULL OR c.workspace_id = $?)", *f.VisibleIn)
	}
	if f.Scope != "" {
		add("c.scope = $?", f.Scope)
	}
	if f.SourceID != "" {
		add("c.source_id = $?", f.SourceID)
	}
	out := []Credential{}
	err := s.db.SelectContext(ctx, &out, credentialSelect+where+
		` ORDER BY lower(s.name), CASE c.scope WHEN 'account' THEN 0 WHEN 'workspace' THEN 1 ELSE 2 END, w.slug`, args...)
	return out, err
}

// UserCredentials lists a user's account credentials in every
// organization they still belong to.
func (s *Store) UserCredentials(ctx context.Context, userID int64) ([]Credential, error) {
	out := []Credential{}
	err := s.db.SelectContext(ctx, &out, credentialSelect+` WHERE c.user_id = $1 AND c.scope = 'account'
		AND EXISTS (SELECT 1 FROM memberships m WHERE m.org_id = c.org_id AND m.user_id = $1)
		ORDER BY o.slug, lower(s.name)`, userID)
	return out, err
}

// CredentialsFor returns the credentials a call of a source in a workspace
// by a user could use, in the order they apply: the user's own, the
// workspace's, then the organization's. A nil user or workspace skips that
// level.
func (s *Store) CredentialsFor(ctx context.Context, orgID int64, sourceID string, workspaceID, userID *int64) ([]Credential, error) {
	out := []Credential{}
	err := s.db.SelectContext(ctx, &out, credentialSelect+` WHERE c.org_id = $1 AND c.source_id = $2
		AND ((c.scope = 'account' AND c.user_id = $4) OR (c.scope = 'workspace' AND c.workspace_id = $3) OR c.scope = 'organization')
		ORDER BY CASE c.scope WHEN 'account' THEN 0 WHEN 'workspace' THEN 1 ELSE 2 END`, orgID, sourceID, workspaceID, userID)
	return out, err
}

// CredentialChange replaces a credential's auth and sealed value.
type CredentialChange struct {
	Auth       json.RawMessage
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
	Hint       string
	ActorID    int64
}

// UpdateCredential writes a changed credential and its audit event.
func (s *Store) UpdateCredential(ctx context.Context, orgID int64, id string, ch CredentialChange, audit AuditEvent) (Credential, error) {
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE credentials SET auth = $3, key_id = $4, nonce = $5, ciphertext = $6, hint = $7,
				updated_by = NULLIF($8, 0), updated_at = now()
			WHERE org_id = $1 AND id = $2`, orgID, id, ch.Auth, ch.KeyID, ch.Nonce, ch.Ciphertext, ch.Hint, ch.ActorID)
		if err := oneRow(res, err); err != nil {
			return err
		}
		return addAudit(ctx, tx, audit)
	})
	if err := s.gatewayChanged(orgID, err); err != nil {
		return Credential{}, err
	}
	return s.Credential(ctx, orgID, id)
}

// DeleteCredential removes a credential and records the event.
func (s *Store) DeleteCredential(ctx context.Context, orgID int64, id string, audit AuditEvent) error {
	return s.gatewayChanged(orgID, s.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM credentials WHERE org_id = $1 AND id = $2`, orgID, id)
		if err := oneRow(res, err); err != nil {
			return err
		}
		return addAudit(ctx, tx, audit)
	}))
}

// TouchCredential records a credential's use, at most once a minute.
func (s *Store) TouchCredential(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE credentials SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, id)
	return err
}

// SealedCredential is a credential's id, organization and sealed value, for
// re-encryption.
type SealedCredential struct {
	ID         string `db:"id"`
	OrgID      int64  `db:"org_id"`
	KeyID      string `db:"key_id"`
	Nonce      []byte `db:"nonce"`
	Ciphertext []byte `db:"ciphertext"`
}

// CredentialsNotUnder lists up to limit credentials sealed under another
// key than keyID, skipping the ids in skip (values that failed to open).
func (s *Store) CredentialsNotUnder(ctx context.Context, keyID string, skip []string, limit int) ([]SealedCredential, error) {
	out := []SealedCredential{}
	err := s.db.SelectContext(ctx, &out, `SELECT id, org_id, key_id, nonce, ciphertext FROM credentials
		WHERE key_id <> $1 AND NOT (id = ANY($2)) ORDER BY id LIMIT $3`, keyID, skip, limit)
	return out, err
}

// CountCredentialsByKey counts credentials per key id.
func (s *Store) CountCredentialsByKey(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		KeyID string `db:"key_id"`
		N     int    `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT key_id, count(*) AS n FROM credentials GROUP BY key_id`); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.KeyID] = r.N
	}
	return out, nil
}

// Reseal replaces a value still sealed as old. It writes nothing when the
// row changed meanwhile (a replaced value is already under the current
// key), so an interrupted rotation can simply run again.
func (s *Store) Reseal(ctx context.Context, old SealedCredential, keyID string, nonce, ciphertext []byte) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE credentials SET key_id = $4, nonce = $5, ciphertext = $6
		WHERE id = $1 AND key_id = $2 AND nonce = $3`, old.ID, old.KeyID, old.Nonce, keyID, nonce, ciphertext)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// HolderCredential finds the credential of a source held by one holder: a
// workspace (workspaceID), a user (userID) or, with both nil, the
// organization.
func (s *Store) HolderCredential(ctx context.Context, orgID int64, sourceID, scope string, workspaceID, userID *int64) (Credential, error) {
	var c Credential
	err := s.db.GetContext(ctx, &c, credentialSelect+` WHERE c.org_id = $1 AND c.source_id = $2 AND c.scope = $3
		AND c.workspace_id IS NOT DISTINCT FROM $4 AND c.user_id IS NOT DISTINCT FROM $5`, orgID, sourceID, scope, workspaceID, userID)
	return c, translate(err)
}

// MemberSource finds a source by id in any organization the user belongs
// to, with the user's role there.
func (s *Store) MemberSource(ctx context.Context, userID int64, sourceID string) (Source, string, error) {
	var row struct {
		OrgID int64  `db:"org_id"`
		Role  string `db:"role"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT s.org_id, m.role FROM sources s
		JOIN memberships m ON m.org_id = s.org_id AND m.user_id = $1 WHERE s.id = $2`, userID, sourceID)
	if err != nil {
		return Source{}, "", translate(err)
	}
	src, err := s.Source(ctx, row.OrgID, sourceID)
	return src, row.Role, err
}
