package approvals

import (
	"context"
	"time"
)

// Wait blocks until request id leaves pending (a decision, or its expiry,
// which Wait marks), until timeout passes, or until ctx ends, and returns
// the request as it then stands: still Pending after the timeout (err nil),
// with ctx's error when ctx ended. tick, if not nil, is called about every
// [Options.TickInterval] with the time waited so far (the gateway turns
// ticks into MCP progress). A NOTIFY from any replica wakes it; a slow poll
// covers a lost notification or a decision written while this replica was
// down. A timeout of zero or less reads the request once.
func (s *Service) Wait(ctx context.Context, orgID int64, id string, timeout time.Duration, tick func(waited time.Duration)) (Approval, error) {
	return s.waitWhile(ctx, orgID, id, timeout, tick, Pending)
}

// WaitResult blocks while request id is executing on some replica, with
// the same bounds, wake-ups and ticks as [Service.Wait], and returns it as
// it then stands: Executed when the execution finished (read the outcome
// with [Service.Result]), still Executing after the timeout. It is for the
// callers that lost [Service.Claim].
func (s *Service) WaitResult(ctx context.Context, orgID int64, id string, timeout time.Duration, tick func(waited time.Duration)) (Approval, error) {
	return s.waitWhile(ctx, orgID, id, timeout, tick, Executing)
}

// waitWhile re-reads the request on every wake-up until its status is no
// longer while.
func (s *Service) waitWhile(ctx context.Context, orgID int64, id string, timeout time.Duration, tick func(time.Duration), while Status) (Approval, error) {
	// Register before the first read, so a change between the read and the
	// wait still wakes us.
	woken, done := s.watch(id)
	defer done()
	start := time.Now()
	a, err := s.load(ctx, orgID, id)
	if err != nil || a.Status != while || timeout <= 0 {
		return a, err
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(s.opts.PollInterval)
	defer poll.Stop()
	ticks := time.NewTicker(s.opts.TickInterval)
	defer ticks.Stop()
	// A pending request is re-read when it falls due, to mark it expired,
	// and then every second until the database's clock agrees.
	due := time.NewTimer(max(time.Until(a.ExpiresAt), 0) + 10*time.Millisecond)
	defer due.Stop()
	if while != Pending {
		due.Stop()
	}
	for {
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-deadline.C:
			// One last read: the answer may have come in the same instant.
			return s.reload(ctx, orgID, id, a)
		case <-ticks.C:
			if tick != nil {
				tick(time.Since(start))
			}
			continue
		case <-woken:
		case <-poll.C:
		case <-due.C:
			due.Reset(time.Second)
		}
		a, err = s.reload(ctx, orgID, id, a)
		if err != nil || a.Status != while {
			return a, err
		}
	}
}

// reload re-reads a request, keeping the last good copy on an error.
func (s *Service) reload(ctx context.Context, orgID int64, id string, last Approval) (Approval, error) {
	a, err := s.load(ctx, orgID, id)
	if err != nil {
		return last, err
	}
	return a, nil
}
