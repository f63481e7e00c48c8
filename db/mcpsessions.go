package db

import (
	"context"
	"encoding/json"
	"time"
)

// MCPSession is an MCP session's state as every replica can read it.
type MCPSession struct {
	ID          string          `db:"id"`
	KeyID       int64           `db:"key_id"`
	OrgID       int64           `db:"org_id"`
	WorkspaceID int64           `db:"workspace_id"`
	Mode        string          `db:"mode"`
	State       json.RawMessage `db:"state"`
	CreatedAt   time.Time       `db:"created_at"`
	LastSeenAt  time.Time       `db:"last_seen_at"`
}

// SaveMCPSession stores a new session or replaces its state.
func (s *Store) SaveMCPSession(ctx context.Context, m MCPSession) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO mcp_sessions (id, key_id, org_id, workspace_id, mode, state)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, last_seen_at = now()`,
		m.ID, m.KeyID, m.OrgID, m.WorkspaceID, m.Mode, m.State)
	return translate(err)
}

// MCPSessionByID returns a session unless it has been idle longer than
// maxIdle.
func (s *Store) MCPSessionByID(ctx context.Context, id string, maxIdle time.Duration) (MCPSession, error) {
	var m MCPSession
	err := s.db.GetContext(ctx, &m, `SELECT id, key_id, org_id, workspace_id, mode, state, created_at, last_seen_at
		FROM mcp_sessions WHERE id = $1 AND last_seen_at > now() - make_interval(secs => $2)`, id, maxIdle.Seconds())
	return m, translate(err)
}

// TouchMCPSession records that a session was used, at most once a minute.
func (s *Store) TouchMCPSession(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE mcp_sessions SET last_seen_at = now()
		WHERE id = $1 AND last_seen_at < now() - interval '1 minute'`, id)
	return err
}

// DeleteMCPSession ends a session for every replica.
func (s *Store) DeleteMCPSession(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM mcp_sessions WHERE id = $1`, id)
	return err
}

// DeleteIdleMCPSessions removes sessions idle longer than maxIdle.
func (s *Store) DeleteIdleMCPSessions(ctx context.Context, maxIdle time.Duration) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM mcp_sessions WHERE last_seen_at < now() - make_interval(secs => $1)`, maxIdle.Seconds())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
