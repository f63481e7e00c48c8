package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/policy"
)

// finishTimeout bounds storing an approved call's result, which must
// happen even when the caller has gone.
const finishTimeout = 30 * time.Second

// ApprovalNotFoundError is an approval id the caller may not resume:
// unknown, another workspace's or organization's, or another person's
// request (it would run with their credentials).
type ApprovalNotFoundError struct{ ID string }

func (e *ApprovalNotFoundError) Error() string {
	return fmt.Sprintf("no approval %q in this workspace", e.ID)
}

// PendingResult is the structured content of a held call's answer when
// no outcome is known yet (StructuredContent of the result): the agent
// resumes with the approval id.
type PendingResult struct {
	// Status is "pending" (waiting for a person) or "executing" (approved
	// and running, on this replica or another).
	Status     string    `json:"status"`
	ApprovalID string    `json:"approval_id"`
	Tool       string    `json:"tool"`
	URL        string    `json:"url,omitempty"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// wait is how long a call of c waits for a decision or a result.
func (g *Gateway) wait(c Caller) time.Duration {
	if c.NoApprovalWait {
		return 0
	}
	return g.opts.ApprovalWait
}

// hold asks a person to approve a call that passed every other check,
// records it as pending, and waits for the decision.
func (g *Gateway) hold(ctx context.Context, c Caller, t *db.CallTool, d policy.Decision, args json.RawMessage,
	progress Progress, rec *audit.Call) (*mcp.CallToolResult, error) {
	if g.opts.Approvals == nil {
		text := fmt.Sprintf("toolgate refused this call to %s: it requires a person's approval (%s), and this server has no approvals service.", t.Path, d.Reason)
		rec.Outcome, rec.Error = audit.OutcomeDenied, text
		return errorResult(text), nil
	}
	req := approvals.NewRequest{OrgID: c.OrgID, WorkspaceID: c.WorkspaceID, Tool: t.Path, SourceID: t.SourceID,
		Arguments: compactArgs(args), Redacted: rec.Arguments, KeyID: c.KeyID, Via: c.Via, Reason: d.Reason,
		AllowSelfApproval: d.AllowSelfApproval(), TTL: d.ApprovalTTL()}
	if c.UserID != 0 {
		id := c.UserID
		req.UserID = &id
	}
	if d.Rule != nil {
		id := d.Rule.ID
		req.PolicyID = &id
	}
	a, err := g.opts.Approvals.Request(ctx, req)
	if err != nil {
		rec.Outcome, rec.Error = audit.OutcomeError, "toolgate could not store the approval request"
		return nil, fmt.Errorf("request approval for %s: %w", t.Path, err)
	}
	pending := *rec
	pending.Outcome, pending.ApprovalID, pending.Error = audit.OutcomePending, a.ID, "held for approval: "+d.Reason
	g.record(pending)

	rec.ApprovalID = a.ID
	wait := g.wait(c)
	if c.Ask != nil && wait > 0 {
		start := time.Now()
		a = g.askCaller(ctx, c, a, wait)
		wait = max(wait-time.Since(start), 0)
	}
	res, err := g.settle(ctx, c, a, progress, wait, rec)
	if err != nil {
		rec.Outcome = "" // the pending row stands
	}
	return res, err
}

// askCaller lets the caller decide its own request through c.Ask, when
// the request's rule allows self-approval and the caller may decide it
// (its role, or the workspace's approvers), within wait. It only decides:
// the approved call still runs once, through settle's claim. Without an
// answer, or when the decision does not count (a person decided first),
// it returns a as it was and the call waits as usual.
func (g *Gateway) askCaller(ctx context.Context, c Caller, a approvals.Approval, wait time.Duration) approvals.Approval {
	if !a.AllowSelfApproval || c.UserID == 0 || a.Status != approvals.Pending {
		return a
	}
	d := approvals.Decider{UserID: c.UserID, Role: auth.Role(c.Role)}
	ok, _, err := g.opts.Approvals.CanDecide(ctx, a, d)
	if err != nil {
		g.opts.Logger.Warn("check self-approval", "approval", a.ID, "error", err.Error())
		return a
	}
	if !ok {
		return a
	}
	actx, cancel := context.WithTimeout(ctx, wait)
	approve, comment, answered := c.Ask(actx, a)
	cancel()
	if !answered || ctx.Err() != nil {
		return a
	}
	decided, err := g.opts.Approvals.Decide(ctx, c.OrgID, c.WorkspaceID, a.ID, d, approve, cutRunes(comment, approvals.MaxComment))
	if err != nil {
		g.opts.Logger.Info("self-approval not recorded", "approval", a.ID, "error", err.Error())
		return a
	}
	return decided
}

// cutRunes keeps the first n characters of s.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// settle takes a request to its outcome as far as wait allows: it waits
// for the decision, runs the approved call if this caller wins the claim
// (recording its row), or waits for the winner's result. rec is left with
// an outcome only when the request was denied or has expired, for the
// call that asked to record.
func (g *Gateway) settle(ctx context.Context, c Caller, a approvals.Approval, progress Progress, wait time.Duration,
	rec *audit.Call) (*mcp.CallToolResult, error) {
	start := time.Now()
	tick := waitTicker(a.ID, wait, progress)
	var err error
	if a.Status == approvals.Pending {
		if a, err = g.opts.Approvals.Wait(ctx, c.OrgID, a.ID, wait, tick); err != nil {
			return nil, fmt.Errorf("wait for approval %s: %w", a.ID, err)
		}
	}
	rec.Outcome = ""
	switch a.Status {
	case approvals.Pending:
		return g.pendingResult(c, a, "pending"), nil
	case approvals.Denied:
		text := deniedByText(a)
		rec.Outcome, rec.Error = audit.OutcomeDenied, text
		return errorResult(text), nil
	case approvals.Expired:
		text := expiredText(a)
		rec.Outcome, rec.Error = audit.OutcomeExpired, text
		return errorResult(text), nil
	case approvals.Approved:
		args, claimed, now, err := g.opts.Approvals.Claim(ctx, c.OrgID, a.ID)
		if err != nil {
			return nil, err
		}
		if claimed {
			res := g.runApproved(ctx, now, args, progress)
			return res, nil
		}
		a = now
	}
	// Executing or executed by whoever won the claim.
	if a.Status == approvals.Executing {
		left := max(wait-time.Since(start), 0)
		if a, err = g.opts.Approvals.WaitResult(ctx, c.OrgID, a.ID, left, tick); err != nil {
			return nil, fmt.Errorf("wait for the result of approval %s: %w", a.ID, err)
		}
	}
	switch a.Status {
	case approvals.Executed:
		return g.storedResult(ctx, c, a)
	case approvals.Denied, approvals.Expired:
		// Settled between two reads: say so without waiting again.
		return g.settle(ctx, c, a, progress, 0, rec)
	case approvals.Pending:
		return g.pendingResult(c, a, "pending"), nil
	}
	return g.pendingResult(c, a, "executing"), nil
}

// waitTicker turns the approvals service's ticks into MCP progress.
func waitTicker(id string, wait time.Duration, progress Progress) func(time.Duration) {
	if progress == nil {
		return nil
	}
	return func(waited time.Duration) {
		progress(waited.Seconds(), wait.Seconds(), fmt.Sprintf("waiting for approval %s (%d s)", id, int(waited.Seconds())))
	}
}

// runApproved runs an approved call with the arguments the claim returned
// (the approved ones), as the person who asked for it with their current
// role in the organization, and stores its result for them to read later.
// It runs to its end even if ctx's caller goes away: the call runs once
// and its outcome must be kept.
func (g *Gateway) runApproved(ctx context.Context, a approvals.Approval, args json.RawMessage, progress Progress) *mcp.CallToolResult {
	ctx = context.WithoutCancel(ctx)
	c := Caller{OrgID: a.OrgID, WorkspaceID: a.WorkspaceID, KeyID: a.KeyID, Via: a.Via, UserEmail: a.UserEmail, KeyName: a.KeyName}
	rec := &audit.Call{OrgID: c.OrgID, WorkspaceID: c.WorkspaceID, KeyID: c.KeyID, Via: c.Via,
		Tool: a.Tool, SourceID: a.SourceID, Arguments: a.Arguments, ApprovalID: a.ID, StartedAt: time.Now()}
	var res *mcp.CallToolResult
	err := g.requester(ctx, a, &c)
	if err == nil {
		rec.UserID = c.UserID
		res, err = g.executeApproved(ctx, c, a, args, progress, rec)
	}
	if err != nil {
		var inv *InvalidArgumentsError
		var nf *NotFoundError
		var gone *requesterGoneError
		switch {
		case errors.As(err, &inv), errors.As(err, &nf):
			res = errorResult(err.Error())
		case errors.As(err, &gone):
			res = errorResult(err.Error())
			rec.Outcome, rec.Error = audit.OutcomeDenied, err.Error()
		default:
			g.opts.Logger.Error("run approved call", "approval", a.ID, "error", err.Error())
			res = errorResult(fmt.Sprintf("toolgate could not run the approved call to %s: %v", a.Tool, err))
			if rec.Outcome == "" {
				rec.Outcome, rec.Error = audit.OutcomeError, err.Error()
			}
		}
	}
	b, err := json.Marshal(res)
	if err == nil {
		fctx, cancel := context.WithTimeout(ctx, finishTimeout)
		err = g.opts.Approvals.Finish(fctx, a.OrgID, a.ID, b)
		cancel()
	}
	if err != nil {
		// The runner still gets the result it waited for; only later
		// readers see what the store holds (the sweep's "stopped" outcome
		// when it settled the request first).
		g.opts.Logger.Error("store approved call result", "approval", a.ID, "error", err.Error())
		res = withNote(res, fmt.Sprintf("Note: toolgate could not store this result with approval %s; asking for it later will not return it, so keep it now.", a.ID))
	}
	g.record(*rec)
	return res
}

// requesterGoneError ends an approved call whose requester left the
// organization (or has no account) before it ran: nothing runs.
type requesterGoneError struct{ a approvals.Approval }

func (e *requesterGoneError) Error() string {
	return fmt.Sprintf("toolgate did not run the approved call to %s (approval %s): the person who asked for it is no longer a member of this organization.",
		e.a.Tool, e.a.ID)
}

// requester fills c with the user who asked for a and their role in the
// organization now (a role changed since the request counts for the
// policy check that precedes the run).
func (g *Gateway) requester(ctx context.Context, a approvals.Approval, c *Caller) error {
	if a.UserID == nil {
		return &requesterGoneError{a}
	}
	m, err := g.opts.Store.Member(ctx, a.OrgID, *a.UserID)
	if errors.Is(err, db.ErrNotFound) {
		return &requesterGoneError{a}
	}
	if err != nil {
		return fmt.Errorf("read the requester's membership: %w", err)
	}
	c.UserID, c.Role = *a.UserID, m.Role
	return nil
}

// SourceChangedError ends an approved call whose tool now comes from
// another source than the one the person approved (the source was
// deleted and one of the same name created): nothing runs.
type SourceChangedError struct {
	Path, ApprovalID string
}

func (e *SourceChangedError) Error() string {
	return fmt.Sprintf("toolgate did not run the approved call to %s (approval %s): its source changed since the approval (it was removed and another one now has its name). Call again to ask for a new approval.",
		e.Path, e.ApprovalID)
}

// executeApproved is the pipeline's steps after the approval: the tool
// resolved again (it may have changed or gone), the workspace's rules
// asked again (a deny added since wins), the credential, the schema and
// the execution.
func (g *Gateway) executeApproved(ctx context.Context, c Caller, a approvals.Approval, args json.RawMessage, progress Progress, rec *audit.Call) (*mcp.CallToolResult, error) {
	t, err := g.callTool(ctx, c, a.Tool)
	if errors.Is(err, db.ErrNotFound) || err == nil && !t.SourceEnabled {
		nf := &NotFoundError{Path: a.Tool}
		rec.Outcome, rec.Error = audit.OutcomeNotFound, nf.Error()
		return nil, nf
	}
	if err != nil {
		rec.Outcome, rec.Error = audit.OutcomeError, "toolgate could not look up the tool"
		return nil, fmt.Errorf("look up tool %q: %w", a.Tool, err)
	}
	if a.SourceID != "" && t.SourceID != a.SourceID {
		sc := &SourceChangedError{Path: a.Tool, ApprovalID: a.ID}
		rec.Outcome, rec.Error = audit.OutcomeDenied, sc.Error()
		return errorResult(sc.Error()), nil
	}
	tp := g.toolPlan(&t)
	v, err := decodeArguments(args)
	if err != nil {
		return nil, g.invalid(rec, t.Path, []string{"(arguments): not JSON: " + err.Error()}, nil)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, g.invalid(rec, t.Path, []string{fmt.Sprintf("(arguments): must be an object, not %s", jsonKind(v))}, nil)
	}
	d, err := g.decide(ctx, c, &t, tp, obj)
	if err != nil {
		rec.Outcome, rec.Error = audit.OutcomeError, "toolgate could not load the workspace's policies"
		return nil, err
	}
	if d.Effect == policy.Deny {
		text := deniedText(t.Path, d) + " (a rule added after the approval)"
		rec.Outcome, rec.Error = audit.OutcomeDenied, text
		return errorResult(text), nil
	}
	sp := g.sourcePlan(c.OrgID, &t)
	cred, credID, err := g.credential(ctx, c.OrgID, &t, sp)
	if err != nil {
		rec.Outcome, rec.Error = audit.OutcomeError, "toolgate could not open the source's credential"
		return nil, err
	}
	if tp.schema != nil {
		if p := problems(tp.schema, obj); len(p) > 0 {
			return nil, g.invalid(rec, t.Path, p, cred.auth)
		}
	}
	return g.execute(ctx, &t, tp, sp, cred, credID, obj, args, progress, rec)
}

// storedResult is the result the one execution of a request stored.
func (g *Gateway) storedResult(ctx context.Context, c Caller, a approvals.Approval) (*mcp.CallToolResult, error) {
	b, err := g.opts.Approvals.Result(ctx, c.OrgID, a.ID)
	if err != nil {
		return nil, fmt.Errorf("read the result of approval %s: %w", a.ID, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("read the result of approval %s: %w", a.ID, err)
	}
	return &res, nil
}

// pendingResult answers a call whose outcome is not known yet: not an
// error, with the approval id to resume with.
func (g *Gateway) pendingResult(c Caller, a approvals.Approval, status string) *mcp.CallToolResult {
	p := PendingResult{Status: status, ApprovalID: a.ID, Tool: a.Tool, ExpiresAt: a.ExpiresAt.UTC()}
	if g.opts.ApprovalURL != nil && c.OrgSlug != "" && c.WorkspaceSlug != "" {
		p.URL = g.opts.ApprovalURL(c.OrgSlug, c.WorkspaceSlug, a.ID)
	}
	var text string
	if status == "executing" {
		text = fmt.Sprintf("The call to %s was approved and is running now (approval %s); its result is not in yet.\n"+
			"Ask for it with get_approval {\"approval_id\": %q} (call_tool with the same approval_id works too). It will not run twice.",
			a.Tool, a.ID, a.ID)
	} else {
		text = fmt.Sprintf("The call to %s is waiting for a person's approval (approval %s). Nothing has run yet.\n"+
			"Ask for the outcome later with get_approval {\"approval_id\": %q} (or call_tool with the same path and \"approval_id\": %q); "+
			"once approved, the call runs exactly once, with the arguments that were approved. The request expires at %s.",
			a.Tool, a.ID, a.ID, a.ID, p.ExpiresAt.Format(time.RFC3339))
		if p.URL != "" {
			text += "\nA person decides at " + p.URL
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: p}
}

// expiredText says a request expired: undecided, or approved but not run
// before its expiry.
func expiredText(a approvals.Approval) string {
	at := a.ExpiresAt.UTC().Format(time.RFC3339)
	if a.DecidedAt != nil {
		return fmt.Sprintf("This call to %s was approved, but nobody ran it before approval %s expired at %s, so it will not run. Call again to ask anew.",
			a.Tool, a.ID, at)
	}
	return fmt.Sprintf("Nobody decided on this call to %s in time: approval %s expired at %s, and nothing ran. Call again to ask anew.",
		a.Tool, a.ID, at)
}

// deniedByText says who refused a held call, and why when they said.
func deniedByText(a approvals.Approval) string {
	text := fmt.Sprintf("A person denied this call to %s (approval %s); nothing ran.", a.Tool, a.ID)
	if a.DecidedByEmail != "" {
		text = fmt.Sprintf("%s denied this call to %s (approval %s); nothing ran.", a.DecidedByEmail, a.Tool, a.ID)
	}
	if a.Comment != "" {
		text += " Their comment: " + a.Comment
	}
	return text
}

// Resume continues a call held for approval id, from any session or
// replica: it waits for the decision (as long as a call does), runs the
// approved call if nobody has (with the approved arguments, never args),
// or returns the stored result of the one execution. path and args are
// what the agent sent with the id (both may be empty, as get_approval
// sends): a path that names another tool is refused, and arguments that
// differ from the approved ones are said to have been ignored. An id the
// caller's workspace does not hold, or that another person asked for, is
// an [*ApprovalNotFoundError].
func (g *Gateway) Resume(ctx context.Context, c Caller, id, path string, args json.RawMessage, progress Progress) (*mcp.CallToolResult, error) {
	if g.opts.Approvals == nil {
		return nil, &ApprovalNotFoundError{ID: id}
	}
	a, err := g.opts.Approvals.Get(ctx, c.OrgID, c.WorkspaceID, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, &ApprovalNotFoundError{ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read approval %s: %w", id, err)
	}
	if !requestedBy(a, c) {
		// Ids are visible to the workspace's members; only the requester
		// may run the call (as themselves) or read its result.
		return nil, &ApprovalNotFoundError{ID: id}
	}
	if path != "" && path != a.Tool {
		t, err := g.callTool(ctx, c, path)
		if err != nil || t.Path != a.Tool {
			return errorResult(fmt.Sprintf("approval %s is for a call to %s, not %s; send its path, or only the approval_id.", a.ID, a.Tool, path)), nil
		}
	}
	var rec audit.Call
	res, err := g.settle(ctx, c, a, progress, g.wait(c), &rec)
	if err != nil {
		return nil, err
	}
	if differs(args, a.Arguments) {
		res = withNote(res, "Note: the arguments sent with approval_id differ from the approved ones; toolgate used only the approved arguments (an approval covers exactly those). To run different arguments, call without approval_id.")
	}
	return res, nil
}

// requestedBy reports whether c is the person who asked for a: the same
// user, through any of their keys or the console.
func requestedBy(a approvals.Approval, c Caller) bool {
	return a.UserID != nil && c.UserID != 0 && *a.UserID == c.UserID
}

// differs reports whether arguments an agent sent with an approval id
// differ from the approved ones, compared as the approval shows them
// (redacted alike). None sent is no difference.
func differs(sent json.RawMessage, approved json.RawMessage) bool {
	if len(sent) == 0 || string(sent) == "null" {
		return false
	}
	var x, y any
	if json.Unmarshal(RedactArguments(sent), &x) != nil || json.Unmarshal(approved, &y) != nil {
		return true
	}
	return !reflect.DeepEqual(x, y)
}

// withNote returns a copy of res with a text note added at the end.
func withNote(res *mcp.CallToolResult, note string) *mcp.CallToolResult {
	out := *res
	out.Content = append(append([]mcp.Content(nil), res.Content...), &mcp.TextContent{Text: note})
	return &out
}

// compactArgs is a call's arguments as sealed for the approval: compact
// JSON, {} for none.
func compactArgs(args json.RawMessage) json.RawMessage {
	v, err := decodeArguments(args)
	if err != nil {
		return args
	}
	return marshal(v)
}
