package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// NewToolCall is one audit row as the recorder inserts it. The caller has
// already redacted and capped Arguments and Error.
type NewToolCall struct {
	OrgID, WorkspaceID int64
	// KeyID is nil for calls from the console.
	KeyID *int64
	// UserID is nil when no user is known.
	UserID         *int64
	Via            string
	Tool           string
	SourceID       string
	Arguments      json.RawMessage
	Outcome        string
	Error          string
	UpstreamStatus int // 0: none
	// ApprovalID is the approval that held the call; "" for none.
	ApprovalID string
	StartedAt  time.Time
	DurationUS int64
	// RecordKey identifies the row across attempts to insert it; unique in
	// the table. Zero: no key.
	RecordKey [16]byte
	// Retry marks a row an earlier insert may have written (its answer
	// was lost): it is skipped when the table holds its RecordKey. Only
	// inserts with such a row pay for the check.
	Retry bool
}

// ToolCall is one audit row, with the key's name and the user's email for
// display.
type ToolCall struct {
	ID             int64           `db:"id"`
	OrgID          int64           `db:"org_id"`
	WorkspaceID    int64           `db:"workspace_id"`
	KeyID          *int64          `db:"key_id"`
	KeyName        *string         `db:"key_name"`
	KeyRevoked     bool            `db:"key_revoked"`
	UserID         *int64          `db:"user_id"`
	UserEmail      *string         `db:"user_email"`
	UserName       *string         `db:"user_name"`
	Via            string          `db:"via"`
	Tool           string          `db:"tool"`
	SourceID       string          `db:"source_id"`
	Arguments      json.RawMessage `db:"arguments"`
	Outcome        string          `db:"outcome"`
	Error          string          `db:"error"`
	UpstreamStatus *int            `db:"upstream_status"`
	ApprovalID     *string         `db:"approval_id"`
	StartedAt      time.Time       `db:"started_at"`
	DurationUS     int64           `db:"duration_us"`
}

// ToolCallCursor is a position in a list of calls, newest first: the next
// page holds the calls older than it.
type ToolCallCursor struct {
	StartedAt time.Time
	ID        int64
}

// ToolCallFilter narrows a workspace's calls. Zero values do not filter.
type ToolCallFilter struct {
	// Tool is an exact path, or with ToolPrefix the start of paths.
	Tool       string
	ToolPrefix bool
	// KeyID keeps the calls made with one key; Console keeps those made
	// without a key.
	KeyID   *int64
	Console bool
	Outcome string
	// Since is inclusive, Until exclusive.
	Since, Until *time.Time
	// Before continues a list after its last page's last call.
	Before *ToolCallCursor
	// Limit is the page size; 0 means 50.
	Limit int
}

// ToolCallPage is a page of calls, newest first; Next is nil on the last.
type ToolCallPage struct {
	Calls []ToolCall
	Next  *ToolCallCursor
}

// ToolCallKey is a key in the Activity page's filter: revoked keys too,
// since their calls stay.
type ToolCallKey struct {
	ID      int64  `db:"id"`
	Name    string `db:"name"`
	Revoked bool   `db:"revoked"`
}

const toolCallSelect = `SELECT t.id, t.org_id, t.workspace_id, t.key_id, k.name AS key_name, k.revoked_at IS NOT NULL AS key_revoked, t.user_id,
	u.email AS user_email, u.name AS user_name, t.via, t.tool, t.source_id, t.arguments, t.outcome, t.error,
	t.upstream_status, t.approval_id, t.started_at, t.duration_us
	FROM tool_calls t
	LEFT JOIN api_keys k ON k.id = t.key_id
	LEFT JOIN users u ON u.id = t.user_id`

// InsertToolCalls writes a batch of audit rows in one statement and returns
// how many it wrote. Rows of a workspace deleted meanwhile are skipped (its
// calls would be deleted with it), and so are Retry rows whose RecordKey
// the table already holds (an earlier attempt wrote them); a key or user
// deleted meanwhile is left out of its row, so one stale row does not fail
// the batch.
//
// tool_calls has no foreign keys (they checked every row apart): the
// statement locks each workspace, key and user the batch names once, as
// the checks did, so a deletion waits for the batch and its triggers then
// see the batch's rows (migration 00014).
func (s *Store) InsertToolCalls(ctx context.Context, calls []NewToolCall) (int64, error) {
	if len(calls) == 0 {
		return 0, nil
	}
	stmt := insertToolCalls
	if slices.ContainsFunc(calls, func(c NewToolCall) bool { return c.Retry }) {
		stmt += ` ON CONFLICT (record_key) DO NOTHING`
	}
	tag, err := s.pool.Exec(ctx, stmt, toolCallColumns(calls)...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// toolCallColumns are insertToolCalls' arguments: one array per column.
func toolCallColumns(calls []NewToolCall) []any {
	n := len(calls)
	var (
		orgs, workspaces = make([]int64, n), make([]int64, n)
		keys, users      = make([]*int64, n), make([]*int64, n)
		via, tool, src   = make([]string, n), make([]string, n), make([]string, n)
		args             = make([]string, n)
		outcome, errs    = make([]string, n), make([]string, n)
		status           = make([]*int32, n)
		started          = make([]time.Time, n)
		duration         = make([]int64, n)
		approvals        = make([]*string, n)
		recordKeys       = make([]pgtype.UUID, n)
	)
	for i, c := range calls {
		orgs[i], workspaces[i], keys[i], users[i] = c.OrgID, c.WorkspaceID, c.KeyID, c.UserID
		via[i], tool[i], src[i], outcome[i], errs[i] = c.Via, c.Tool, c.SourceID, c.Outcome, c.Error
		args[i] = string(c.Arguments)
		if len(c.Arguments) == 0 {
			args[i] = "{}"
		}
		if c.UpstreamStatus != 0 {
			st := int32(c.UpstreamStatus)
			status[i] = &st
		}
		started[i], duration[i] = c.StartedAt, c.DurationUS
		if c.ApprovalID != "" {
			id := c.ApprovalID
			approvals[i] = &id
		}
		recordKeys[i] = pgtype.UUID{Bytes: c.RecordKey, Valid: c.RecordKey != [16]byte{}}
	}
	return []any{orgs, workspaces, keys, users, via, tool, src, args, outcome, errs, status, started, duration, approvals, recordKeys}
}

// insertToolCalls takes the rows as one array per column.
const insertToolCalls = `WITH r AS (
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[],
			$8::jsonb[], $9::text[], $10::text[], $11::int[], $12::timestamptz[], $13::bigint[], $14::text[], $15::uuid[])
			AS r(org_id, workspace_id, key_id, user_id, via, tool, source_id, arguments, outcome, error,
				upstream_status, started_at, duration_us, approval_id, record_key)
	), w AS (
		SELECT id, org_id FROM workspaces WHERE id IN (SELECT workspace_id FROM r) FOR KEY SHARE
	), k AS (
		SELECT id, workspace_id FROM api_keys WHERE id IN (SELECT key_id FROM r) FOR KEY SHARE
	), u AS (
		SELECT id FROM users WHERE id IN (SELECT user_id FROM r) FOR KEY SHARE
	)
	INSERT INTO tool_calls (org_id, workspace_id, key_id, user_id, via, tool, source_id,
		arguments, outcome, error, upstream_status, started_at, duration_us, approval_id, record_key)
	SELECT r.org_id, r.workspace_id, k.id, u.id, r.via, r.tool, r.source_id,
		r.arguments, r.outcome, r.error, r.upstream_status, r.started_at, r.duration_us, r.approval_id, r.record_key
	FROM r
	JOIN w ON w.id = r.workspace_id AND w.org_id = r.org_id
	LEFT JOIN k ON k.id = r.key_id AND k.workspace_id = r.workspace_id
	LEFT JOIN u ON u.id = r.user_id`

// ToolCalls lists a workspace's calls, newest first, a page at a time.
func (s *Store) ToolCalls(ctx context.Context, orgID, workspaceID int64, f ToolCallFilter) (ToolCallPage, error) {
	where := []string{"t.org_id = $1", "t.workspace_id = $2"}
	args := []any{orgID, workspaceID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch {
	case f.Tool != "" && f.ToolPrefix:
		where = append(where, "t.tool LIKE "+arg(escapeLike(f.Tool)+"%"))
	case f.Tool != "":
		where = append(where, "t.tool = "+arg(f.Tool))
	}
	if f.KeyID != nil {
		where = append(where, "t.key_id = "+arg(*f.KeyID))
	} else if f.Console {
		where = append(where, "t.key_id IS NULL")
	}
	if f.Outcome != "" {
		where = append(where, "t.outcome = "+arg(f.Outcome))
	}
	if f.Since != nil {
		where = append(where, "t.started_at >= "+arg(*f.Since))
	}
	if f.Until != nil {
		where = append(where, "t.started_at < "+arg(*f.Until))
	}
	if f.Before != nil {
		where = append(where, "(t.started_at, t.id) < ("+arg(f.Before.StartedAt)+", "+arg(f.Before.ID)+")")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	page := ToolCallPage{Calls: []ToolCall{}}
	err := s.db.SelectContext(ctx, &page.Calls, toolCallSelect+` WHERE `+strings.Join(where, " AND ")+
		` ORDER BY t.started_at DESC, t.id DESC LIMIT `+arg(limit+1), args...)
	if err != nil {
		return ToolCallPage{}, err
	}
	if len(page.Calls) > limit {
		page.Calls = page.Calls[:limit]
		last := page.Calls[limit-1]
		page.Next = &ToolCallCursor{StartedAt: last.StartedAt, ID: last.ID}
	}
	return page, nil
}

// ToolCall loads one of a workspace's calls; another workspace's is ErrNotFound.
func (s *Store) ToolCall(ctx context.Context, orgID, workspaceID, id int64) (ToolCall, error) {
	var c ToolCall
	err := s.db.GetContext(ctx, &c, toolCallSelect+` WHERE t.org_id = $1 AND t.workspace_id = $2 AND t.id = $3`,
		orgID, workspaceID, id)
	return c, translate(err)
}

// ToolCallKeys lists every key of a workspace by name, revoked ones too.
func (s *Store) ToolCallKeys(ctx context.Context, orgID, workspaceID int64) ([]ToolCallKey, error) {
	keys := []ToolCallKey{}
	err := s.db.SelectContext(ctx, &keys, `SELECT id, name, revoked_at IS NOT NULL AS revoked FROM api_keys
		WHERE org_id = $1 AND workspace_id = $2 ORDER BY revoked_at IS NOT NULL, lower(name), id`, orgID, workspaceID)
	return keys, err
}

// RowError reports whether PostgreSQL refused rows for what they hold (a
// data exception, a constraint, a size limit), so that sending the same rows
// again cannot succeed, as opposed to a connection or a server problem.
func RowError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "54":
		return true
	}
	return false
}
