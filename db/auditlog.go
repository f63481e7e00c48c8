package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// AuditEntry is an audit event as the Audit log shows it: with its
// actor's email and name and its workspace's slug and name, each nil
// once deleted (or when there was none).
type AuditEntry struct {
	ID            int64   `db:"id"`
	WorkspaceID   *int64  `db:"workspace_id"`
	WorkspaceSlug *string `db:"workspace_slug"`
	WorkspaceName *string `db:"workspace_name"`
	ActorID       *int64  `db:"actor_id"`
	ActorEmail    *string `db:"actor_email"`
	ActorName     *string `db:"actor_name"`
	// SourceName names the source a credential event's details name;
	// TargetEmail is the user an approver event is about. Nil when gone.
	SourceName  *string         `db:"source_name"`
	TargetEmail *string         `db:"target_email"`
	Action      string          `db:"action"`
	TargetType  string          `db:"target_type"`
	TargetID    string          `db:"target_id"`
	Details     json.RawMessage `db:"details"`
	CreatedAt   time.Time       `db:"created_at"`
}

// auditEvent builds the event of a change: its details as JSON, and no
// actor for actorID 0 (toolgate itself).
func auditEvent(orgID int64, workspaceID *int64, actorID int64, action, targetType, targetID string, details any) AuditEvent {
	raw, _ := json.Marshal(details)
	e := AuditEvent{OrgID: orgID, WorkspaceID: workspaceID, Action: action, TargetType: targetType, TargetID: targetID, Details: raw}
	if actorID != 0 {
		e.ActorID = &actorID
	}
	return e
}

// AuditFilter narrows an organization's events.
type AuditFilter struct {
	// Category is an action's prefix before its dot (credential, api_key,
	// policy, approval, approver); empty for all.
	Category string
	// WorkspaceID keeps one workspace's events.
	WorkspaceID *int64
	// Before keeps events older than this id: the next page.
	Before int64
	Limit  int
}

// AuditPage is a page of events, newest first; Next is the id to pass as
// Before for the following page, 0 on the last.
type AuditPage struct {
	Entries []AuditEntry
	Next    int64
}

// AuditLog lists an organization's events, newest first, a page at a time.
func (s *Store) AuditLog(ctx context.Context, orgID int64, f AuditFilter) (AuditPage, error) {
	where := []string{"e.org_id = $1"}
	args := []any{orgID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Category != "" {
		where = append(where, "starts_with(e.action, "+arg(f.Category+".")+")")
	}
	if f.WorkspaceID != nil {
		where = append(where, "e.workspace_id = "+arg(*f.WorkspaceID))
	}
	if f.Before > 0 {
		where = append(where, "e.id < "+arg(f.Before))
	}
	limit := max(f.Limit, 1)
	page := AuditPage{Entries: []AuditEntry{}}
	err := s.db.SelectContext(ctx, &page.Entries, `SELECT e.id, e.workspace_id, w.slug AS workspace_slug, w.name AS workspace_name,
		e.actor_id, u.email AS actor_email, u.name AS actor_name, src.name AS source_name, tu.email AS target_email,
		e.action, e.target_type, e.target_id, e.details, e.created_at
		FROM audit_events e
		LEFT JOIN workspaces w ON w.id = e.workspace_id
		LEFT JOIN users u ON u.id = e.actor_id
		LEFT JOIN sources src ON src.org_id = e.org_id AND src.id = e.details->>'source_id'
		LEFT JOIN users tu ON tu.id = CASE WHEN e.target_type = 'user' AND e.target_id ~ '^[0-9]{1,18}$' THEN CAST(e.target_id AS bigint) END
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY e.id DESC LIMIT `+arg(limit+1), args...)
	if err != nil {
		return AuditPage{}, err
	}
	if len(page.Entries) > limit {
		page.Entries = page.Entries[:limit]
		page.Next = page.Entries[limit-1].ID
	}
	return page, nil
}
