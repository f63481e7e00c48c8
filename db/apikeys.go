package db

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"
)

// APIKeyChannel is the PostgreSQL notification channel on which every
// change that can end or alter a key's grant is announced, in the changing
// transaction, with the key's id as payload (migration 00011's triggers):
// revocation, expiry, deletion (also of its workspace, organization or
// owner), and a change or end of its owner's membership.
const APIKeyChannel = "toolgate_api_keys"

// APIKey is a workspace API key: agents send it to the MCP endpoint and act
// as its owner. Only its hash is stored.
type APIKey struct {
	ID          int64  `db:"id"`
	OrgID       int64  `db:"org_id"`
	WorkspaceID int64  `db:"workspace_id"`
	UserID      int64  `db:"user_id"`
	Name        string `db:"name"`
	Prefix      string `db:"prefix"`
	// Mode is the tool surface: search or direct.
	Mode       string     `db:"mode"`
	CreatedBy  *int64     `db:"created_by"`
	CreatedAt  time.Time  `db:"created_at"`
	ExpiresAt  *time.Time `db:"expires_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
	// OwnerEmail and OwnerName name the owner in lists.
	OwnerEmail string `db:"owner_email"`
	OwnerName  string `db:"owner_name"`
}

// NewAPIKey is what creating a key stores.
type NewAPIKey struct {
	OrgID, WorkspaceID, UserID int64
	Name, Prefix, Mode         string
	Hash                       []byte
	CreatedBy                  int64
	ExpiresAt                  *time.Time
}

// APIKeyGrant is a live key with what it acts in and as: its organization,
// its workspace and its owner with the owner's role there now.
type APIKeyGrant struct {
	Key       APIKey       `db:"k"`
	Org       Organization `db:"o"`
	Workspace Workspace    `db:"w"`
	User      User         `db:"u"`
	Role      string       `db:"role"`
}

const apiKeyColumns = `k.id, k.org_id, k.workspace_id, k.user_id, k.name, k.prefix, k.mode, k.created_by,
	k.created_at, k.expires_at, k.last_used_at, k.revoked_at, u.email AS owner_email, u.name AS owner_name`

// CreateAPIKey stores a key's hash, and an api_key.created audit event
// by in.CreatedBy in the same transaction.
func (s *Store) CreateAPIKey(ctx context.Context, in NewAPIKey) (APIKey, error) {
	var k APIKey
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &k, `WITH k AS (
			INSERT INTO api_keys (org_id, workspace_id, user_id, name, prefix, key_hash, mode, created_by, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			RETURNING id, org_id, workspace_id, user_id, name, prefix, mode, created_by, created_at, expires_at, last_used_at, revoked_at)
			SELECT `+apiKeyColumns+` FROM k JOIN users u ON u.id = k.user_id`,
			in.OrgID, in.WorkspaceID, in.UserID, in.Name, in.Prefix, in.Hash, in.Mode, in.CreatedBy, in.ExpiresAt)
		if err != nil {
			return translate(err)
		}
		return addAudit(ctx, tx, apiKeyAudit(k, in.CreatedBy, "api_key.created"))
	})
	return k, err
}

// apiKeyAudit is a key's audit event: its name, prefix, mode, owner's
// email and expiry, never its hash.
func apiKeyAudit(k APIKey, actorID int64, action string) AuditEvent {
	return auditEvent(k.OrgID, &k.WorkspaceID, actorID, action, "api_key", strconv.FormatInt(k.ID, 10), map[string]any{
		"name": k.Name, "prefix": k.Prefix, "mode": k.Mode, "owner": k.OwnerEmail, "expires_at": k.ExpiresAt})
}

// APIKeys lists a workspace's keys that are not revoked, newest first.
func (s *Store) APIKeys(ctx context.Context, orgID, workspaceID int64) ([]APIKey, error) {
	ks := []APIKey{}
	err := s.db.SelectContext(ctx, &ks, `SELECT `+apiKeyColumns+` FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.org_id = $1 AND k.workspace_id = $2 AND k.revoked_at IS NULL
		ORDER BY k.created_at DESC, k.id DESC`, orgID, workspaceID)
	return ks, err
}

// APIKeyByID loads one of a workspace's keys that is not revoked.
func (s *Store) APIKeyByID(ctx context.Context, orgID, workspaceID, id int64) (APIKey, error) {
	var k APIKey
	err := s.db.GetContext(ctx, &k, `SELECT `+apiKeyColumns+` FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.org_id = $1 AND k.workspace_id = $2 AND k.id = $3 AND k.revoked_at IS NULL`, orgID, workspaceID, id)
	return k, translate(err)
}

// RevokeAPIKey ends one of a workspace's keys at once: the revoking
// transaction announces it on [APIKeyChannel] to every replica, and the
// functions registered with [Store.OnAPIKeyRevoked] run before it returns,
// so this replica's caches drop the key synchronously.
// The revocation and its api_key.revoked audit event by actorID commit
// together.
func (s *Store) RevokeAPIKey(ctx context.Context, orgID, workspaceID, id, actorID int64) error {
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		var k APIKey
		err := tx.GetContext(ctx, &k, `WITH k AS (
			UPDATE api_keys SET revoked_at = now()
			WHERE org_id = $1 AND workspace_id = $2 AND id = $3 AND revoked_at IS NULL
			RETURNING id, org_id, workspace_id, user_id, name, prefix, mode, created_by, created_at, expires_at, last_used_at, revoked_at)
			SELECT `+apiKeyColumns+` FROM k JOIN users u ON u.id = k.user_id`, orgID, workspaceID, id)
		if err != nil {
			return translate(err)
		}
		return addAudit(ctx, tx, apiKeyAudit(k, actorID, "api_key.revoked"))
	})
	if err != nil {
		return err
	}
	s.keyHooks.run(id)
	return nil
}

// idHooks are functions a Store calls after a change commits, with the
// id of what changed: a revoked key, or the organization whose tool
// lookups changed.
type idHooks struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(id int64)
}

// OnAPIKeyRevoked registers f to run each time this Store revokes a key,
// after the revocation commits and before RevokeAPIKey returns; remove
// unregisters it. Revocations by other processes arrive through
// [Store.ListenAPIKeyChanges].
func (s *Store) OnAPIKeyRevoked(f func(keyID int64)) (remove func()) {
	return s.keyHooks.add(f)
}

// add registers f; the returned function unregisters it.
func (h *idHooks) add(f func(int64)) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fns == nil {
		h.fns = map[int]func(int64){}
	}
	h.next++
	n := h.next
	h.fns[n] = f
	return func() {
		h.mu.Lock()
		delete(h.fns, n)
		h.mu.Unlock()
	}
}

func (h *idHooks) run(id int64) {
	h.mu.Lock()
	fns := make([]func(int64), 0, len(h.fns))
	for _, f := range h.fns {
		fns = append(fns, f)
	}
	h.mu.Unlock()
	for _, f := range fns {
		f(id)
	}
}

// ListenAPIKeyChanges holds a connection of its own that LISTENs on
// [APIKeyChannel], calls ready once it listens, then changed with each
// announced key id (0 for a payload that is not one: drop everything),
// until ctx ends or the connection fails; it returns why. Announcements
// made while nobody listened are lost: a caller starting again must forget
// what it knew.
func (s *Store) ListenAPIKeyChanges(ctx context.Context, ready func(), changed func(keyID int64)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect to listen for key changes: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+APIKeyChannel); err != nil {
		return fmt.Errorf("listen for key changes: %w", err)
	}
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for key changes: %w", err)
		}
		id, err := strconv.ParseInt(n.Payload, 10, 64)
		if err != nil {
			id = 0
		}
		changed(id)
	}
}

// APIKeyByHash finds a live key: not revoked, not expired, and owned by
// someone who still belongs to its organization, with the owner's role as it
// is now. It records the key's use at most once a minute, so a busy agent
// does not write on every request.
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte) (APIKeyGrant, error) {
	var g APIKeyGrant
	err := s.db.GetContext(ctx, &g, `SELECT
		k.id AS "k.id", k.org_id AS "k.org_id", k.workspace_id AS "k.workspace_id", k.user_id AS "k.user_id",
		k.name AS "k.name", k.prefix AS "k.prefix", k.mode AS "k.mode", k.created_by AS "k.created_by",
		k.created_at AS "k.created_at", k.expires_at AS "k.expires_at", k.last_used_at AS "k.last_used_at",
		k.revoked_at AS "k.revoked_at", u.email AS "k.owner_email", u.name AS "k.owner_name",
		o.id AS "o.id", o.slug AS "o.slug", o.name AS "o.name", o.created_at AS "o.created_at", o.updated_at AS "o.updated_at",
		w.id AS "w.id", w.org_id AS "w.org_id", w.slug AS "w.slug", w.name AS "w.name",
		w.created_at AS "w.created_at", w.updated_at AS "w.updated_at",
		u.id AS "u.id", u.email AS "u.email", u.name AS "u.name", u.password_hash AS "u.password_hash",
		u.created_at AS "u.created_at", u.updated_at AS "u.updated_at",
		m.role
		FROM api_keys k
		JOIN organizations o ON o.id = k.org_id
		JOIN workspaces w ON w.id = k.workspace_id AND w.org_id = k.org_id
		JOIN users u ON u.id = k.user_id
		JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.user_id
		WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`, hash)
	if err != nil {
		return APIKeyGrant{}, translate(err)
	}
	if g.Key.LastUsedAt == nil || time.Since(*g.Key.LastUsedAt) > time.Minute {
		if _, err := s.db.ExecContext(ctx, `UPDATE api_keys SET last_used_at = now() WHERE id = $1`, g.Key.ID); err != nil {
			return APIKeyGrant{}, err
		}
	}
	return g, nil
}
