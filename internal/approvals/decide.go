package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/validation"
)

// Decider is the person deciding, with their current role in the
// request's organization.
type Decider struct {
	UserID int64
	Role   auth.Role
}

// MaxComment is the longest decision comment, in characters.
const MaxComment = 1000

// The sentences a page shows to someone who may not decide.
const (
	whyViewer   = "Viewers cannot decide approval requests."
	whySelf     = "You made this request; its rule does not allow self-approval."
	whyNotGiven = "Only organization owners and admins and this workspace's approvers decide its requests."
)

// CanDecide reports whether d may decide a: the organization's owners and
// admins, and members holding the workspace's approver role; never a
// viewer; never the caller itself unless the rule allows self-approval.
// When ok is false, why is a sentence for the page.
func (s *Service) CanDecide(ctx context.Context, a Approval, d Decider) (ok bool, why string, err error) {
	if !d.Role.AtLeast(auth.Member) {
		return false, whyViewer, nil
	}
	if a.UserID != nil && *a.UserID == d.UserID && !a.AllowSelfApproval {
		return false, whySelf, nil
	}
	if d.Role.AtLeast(auth.Admin) {
		return true, "", nil
	}
	approver, err := s.store.IsApprover(ctx, a.OrgID, a.WorkspaceID, d.UserID)
	if err != nil {
		return false, "", fmt.Errorf("look up approver: %w", err)
	}
	if !approver {
		return false, whyNotGiven, nil
	}
	return true, "", nil
}

// Decide approves or denies a pending, unexpired request of a workspace,
// with an optional comment. The update is conditional on the request still
// being pending and unexpired, so of two decisions only one counts; the
// audit row (action approval.approved or approval.denied, with the tool and
// the comment, never the arguments) and the notification go in the same
// transaction. Refusals are [*DecisionError]; another tenant's id is
// db.ErrNotFound; a comment too long is a validation error on "comment".
func (s *Service) Decide(ctx context.Context, orgID, wsID int64, id string, d Decider, approve bool, comment string) (Approval, error) {
	comment = strings.TrimSpace(comment)
	if n := utf8.RuneCountInString(comment); n > MaxComment {
		return Approval{}, validation.Field("comment", fmt.Sprintf("Keep the comment to %d characters (it has %d).", MaxComment, n))
	}
	a, err := s.Get(ctx, orgID, wsID, id)
	if err != nil {
		return Approval{}, err
	}
	ok, why, err := s.CanDecide(ctx, a, d)
	if err != nil {
		return Approval{}, err
	}
	if !ok {
		return a, &DecisionError{Code: "forbidden", Message: why}
	}
	if a.Status != Pending {
		return a, notPending(a)
	}
	status, action := Denied, "approval.denied"
	if approve {
		status, action = Approved, "approval.approved"
	}
	details, err := json.Marshal(map[string]string{"tool": a.Tool, "comment": comment, "via": a.Via})
	if err != nil {
		return Approval{}, err
	}
	decided, err := s.store.DecideApproval(ctx, orgID, wsID, id, string(status), d.UserID, comment, db.AuditEvent{
		OrgID: orgID, WorkspaceID: &wsID, ActorID: &d.UserID, Action: action,
		TargetType: "approval", TargetID: id, Details: details,
	})
	if err != nil {
		return Approval{}, fmt.Errorf("decide approval %s: %w", id, err)
	}
	if !decided {
		// Not pending any more, or past its expiry by the database's clock
		// (which decides): mark that, then say which.
		if _, err := s.store.ExpireApproval(ctx, orgID, id); err != nil {
			return Approval{}, fmt.Errorf("expire approval %s: %w", id, err)
		}
	}
	if a, err = s.Get(ctx, orgID, wsID, id); err != nil {
		return Approval{}, err
	}
	if !decided {
		return a, notPending(a)
	}
	return a, nil
}

// notPending says why a request can no longer be decided.
func notPending(a Approval) *DecisionError {
	switch a.Status {
	case Expired:
		return &DecisionError{Code: "expired", Message: fmt.Sprintf("This request expired at %s without a decision.", stamp(a.ExpiresAt))}
	case Approved, Denied:
		return &DecisionError{Code: "not_pending", Message: fmt.Sprintf("This request was already %s%s.", a.Status, decidedBy(a))}
	case Executing, Executed:
		return &DecisionError{Code: "not_pending", Message: fmt.Sprintf("This request was already approved%s and its call has run.", decidedBy(a))}
	}
	// Still pending here means the row changed between reads; say so plainly.
	return &DecisionError{Code: "not_pending", Message: "This request changed while you decided; reload it."}
}

// decidedBy is " by <email> at <time>", as much of it as is known.
func decidedBy(a Approval) string {
	var b strings.Builder
	if a.DecidedByEmail != "" {
		b.WriteString(" by " + a.DecidedByEmail)
	}
	if a.DecidedAt != nil {
		b.WriteString(" at " + stamp(*a.DecidedAt))
	}
	return b.String()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
