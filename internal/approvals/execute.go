package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/secrets"
)

// Claim moves an approved request to executing, exactly once across
// replicas and retries. The one winner gets the intact, approved
// arguments and claimed = true; everyone else gets claimed = false and the
// request as it stands: still pending, denied or expired, or executing or
// executed by the winner, whose outcome [Service.WaitResult] and
// [Service.Result] give. Another organization's id is db.ErrNotFound.
func (s *Service) Claim(ctx context.Context, orgID int64, id string) (args json.RawMessage, claimed bool, a Approval, err error) {
	sealed, claimed, err := s.store.ClaimApproval(ctx, orgID, id)
	if err != nil {
		return nil, false, Approval{}, fmt.Errorf("claim approval %s: %w", id, err)
	}
	if claimed {
		args, err = s.ring.Open(secrets.Sealed(sealed), associatedData(id, "arguments"))
		if err != nil {
			// The call cannot run; settle it so nobody waits for it.
			s.settleUnopenable(ctx, orgID, id, err)
			return nil, false, Approval{}, fmt.Errorf("open approval %s arguments: %w", id, err)
		}
	}
	a, err = s.load(ctx, orgID, id)
	if err != nil {
		return nil, false, Approval{}, err
	}
	return args, claimed, a, nil
}

// settleUnopenable finishes a claimed request whose arguments do not open
// (its key left the ring) with an error result.
func (s *Service) settleUnopenable(ctx context.Context, orgID int64, id string, cause error) {
	msg := "the approved arguments could not be decrypted, so the call did not run: " + cause.Error()
	if err := s.Finish(ctx, orgID, id, errorResult(msg)); err != nil {
		s.log.Error("approval could not be settled", "approval_id", id, "err", err)
	}
}

// Finish stores the outcome of a claimed request (an MCP CallToolResult as
// JSON), sealed under the key ring, and marks it executed. A request that
// is not executing is db.ErrNotFound.
func (s *Service) Finish(ctx context.Context, orgID int64, id string, result json.RawMessage) error {
	sealed, err := s.sealResult(id, result)
	if err != nil {
		return err
	}
	if err := s.store.FinishApproval(ctx, orgID, id, sealed); err != nil {
		return fmt.Errorf("finish approval %s: %w", id, err)
	}
	return nil
}

func (s *Service) sealResult(id string, result json.RawMessage) (db.SealedValue, error) {
	if !json.Valid(result) {
		return db.SealedValue{}, fmt.Errorf("approval %s: the result is not valid JSON", id)
	}
	sealed, err := s.ring.Seal(result, associatedData(id, "result"))
	if err != nil {
		return db.SealedValue{}, fmt.Errorf("seal approval result: %w", err)
	}
	return db.SealedValue(sealed), nil
}

// Result returns the stored outcome of an executed request; db.ErrNotFound
// before it is executed, and for another organization's id.
func (s *Service) Result(ctx context.Context, orgID int64, id string) (json.RawMessage, error) {
	sealed, err := s.store.ApprovalResult(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	out, err := s.ring.Open(secrets.Sealed(sealed), associatedData(id, "result"))
	if err != nil {
		return nil, fmt.Errorf("open approval %s result: %w", id, err)
	}
	return out, nil
}

// errorResult is an MCP CallToolResult reporting a tool error.
func errorResult(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": msg}},
		"isError": true,
	})
	return b
}

// sweepLoop runs [Service.Sweep] at start and then every SweepInterval
// until Close.
func (s *Service) sweepLoop() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	for {
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("approvals sweep failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// stuckBatch is how many stuck executions one sweep settles.
const stuckBatch = 100

// Sweep marks every overdue pending request expired, and every approved
// one nobody ran before its expiry (an approval is not kept forever for a
// caller who never comes back), and settles requests
// stuck in executing longer than [Options.ExecutingTimeout] with an error
// result saying [StoppedMessage]; they never run a second time. Every
// replica sweeps; the updates are conditional, so they never collide.
func (s *Service) Sweep(ctx context.Context) error {
	n, err := s.store.ExpireApprovals(ctx)
	if err != nil {
		return fmt.Errorf("expire approvals: %w", err)
	}
	if n > 0 {
		s.log.Info("approvals expired", "count", n)
	}
	stuck, err := s.store.StuckApprovals(ctx, s.opts.ExecutingTimeout, stuckBatch)
	if err != nil {
		return fmt.Errorf("find stuck approvals: %w", err)
	}
	var errs []error
	for _, ref := range stuck {
		sealed, err := s.sealResult(ref.ID, errorResult(StoppedMessage))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		settled, err := s.store.FailStuckApproval(ctx, ref.OrgID, ref.ID, s.opts.ExecutingTimeout, sealed)
		if err != nil {
			errs = append(errs, fmt.Errorf("settle stuck approval %s: %w", ref.ID, err))
			continue
		}
		if settled {
			s.log.Warn("approval settled: its executing replica stopped", "approval_id", ref.ID, "org_id", ref.OrgID)
		}
	}
	return errors.Join(errs...)
}
