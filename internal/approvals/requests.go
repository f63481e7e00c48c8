package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/validation"
)

// NewRequest holds one call for a decision.
type NewRequest struct {
	OrgID, WorkspaceID int64
	Tool, SourceID     string
	// Arguments are the call's intact arguments, sealed for the execution;
	// Redacted is the copy pages show (secret-looking keys redacted).
	Arguments, Redacted json.RawMessage
	// The caller: the key and its owner, or the console user.
	KeyID, UserID *int64
	Via           string
	// PolicyID is the rule that held the call; nil for the tool's default.
	PolicyID          *int64
	Reason            string
	AllowSelfApproval bool
	// TTL is how long the request waits for a decision; zero is
	// [DefaultTTL].
	TTL time.Duration
}

// Request stores a pending request with its arguments sealed under the key
// ring, the approval's id bound into the seal.
func (s *Service) Request(ctx context.Context, in NewRequest) (Approval, error) {
	if err := in.check(); err != nil {
		return Approval{}, err
	}
	if in.TTL == 0 {
		in.TTL = DefaultTTL
	}
	if len(in.Arguments) == 0 {
		in.Arguments = json.RawMessage(`{}`)
	}
	id := newID()
	sealed, err := s.ring.Seal(in.Arguments, associatedData(id, "arguments"))
	if err != nil {
		return Approval{}, fmt.Errorf("seal approval arguments: %w", err)
	}
	row, err := s.store.CreateApproval(ctx, db.NewApproval{
		ID: id, OrgID: in.OrgID, WorkspaceID: in.WorkspaceID, Tool: in.Tool, SourceID: in.SourceID,
		Arguments: db.SealedValue{KeyID: sealed.KeyID, Nonce: sealed.Nonce, Ciphertext: sealed.Ciphertext},
		Redacted:  in.Redacted, KeyID: in.KeyID, UserID: in.UserID, Via: in.Via, PolicyID: in.PolicyID,
		Reason: in.Reason, AllowSelfApproval: in.AllowSelfApproval, TTL: in.TTL,
	})
	if err != nil {
		return Approval{}, fmt.Errorf("store approval: %w", err)
	}
	return fromRow(row), nil
}

// check refuses a request that could not be stored or shown.
func (in NewRequest) check() error {
	e := validation.Errors{}
	if in.OrgID == 0 || in.WorkspaceID == 0 {
		e.Add("workspace_id", "A request belongs to a workspace of an organization.")
	}
	if strings.TrimSpace(in.Tool) == "" {
		e.Add("tool", "Name the tool the request holds.")
	}
	if in.Via == "" {
		e.Add("via", "Say how the call came in (mcp, console, ...).")
	}
	if len(in.Arguments) > 0 && !json.Valid(in.Arguments) {
		e.Add("arguments", "The arguments are not valid JSON.")
	}
	if len(in.Redacted) > 0 && !json.Valid(in.Redacted) {
		e.Add("redacted", "The redacted arguments are not valid JSON.")
	}
	if in.TTL < 0 {
		e.Add("ttl", "A request's time to live cannot be negative.")
	}
	return e.Err()
}

// Get loads one request of a workspace, marking it expired first if it is
// pending past its expiry, or approved and nobody ran it before then. Another organization's or workspace's id is
// db.ErrNotFound.
func (s *Service) Get(ctx context.Context, orgID, wsID int64, id string) (Approval, error) {
	a, err := s.load(ctx, orgID, id)
	if err != nil {
		return Approval{}, err
	}
	if a.WorkspaceID != wsID {
		return Approval{}, db.ErrNotFound
	}
	return a, nil
}

// load reads a request of an organization, in any of its workspaces, and
// expires it lazily (pending, or approved and never run, past its expiry).
func (s *Service) load(ctx context.Context, orgID int64, id string) (Approval, error) {
	row, err := s.store.Approval(ctx, orgID, id)
	if err != nil {
		return Approval{}, err
	}
	a := fromRow(row)
	if a.Status != Pending && a.Status != Approved || time.Now().Before(a.ExpiresAt) {
		return a, nil
	}
	expired, err := s.store.ExpireApproval(ctx, orgID, id)
	if err != nil {
		return Approval{}, fmt.Errorf("expire approval %s: %w", id, err)
	}
	if !expired {
		return a, nil // decided meanwhile, or not yet overdue by the database's clock
	}
	row, err = s.store.Approval(ctx, orgID, id)
	return fromRow(row), err
}

// MaxList is the most requests one List returns.
const MaxList = 500

// List returns a workspace's requests, newest first, of one status ("" for
// all), at most limit (0: 100; capped at [MaxList]). Overdue pending
// requests are marked expired first.
func (s *Service) List(ctx context.Context, orgID, wsID int64, status Status, limit int) ([]Approval, error) {
	if status != "" && !status.Valid() {
		return nil, validation.Field("status", "Choose pending, approved, denied, expired, executing or executed.")
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, MaxList)
	if _, err := s.store.ExpireWorkspaceApprovals(ctx, orgID, wsID); err != nil {
		return nil, fmt.Errorf("expire approvals: %w", err)
	}
	rows, err := s.store.Approvals(ctx, orgID, wsID, string(status), limit)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	out := make([]Approval, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

// PendingCount counts a workspace's requests waiting for a decision
// (pending and not past their expiry).
func (s *Service) PendingCount(ctx context.Context, orgID, wsID int64) (int, error) {
	return s.store.PendingApprovalCount(ctx, orgID, wsID)
}
