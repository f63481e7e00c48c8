package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/sources"
)

// maxAuditError caps the error text an audit row keeps.
const maxAuditError = 2 << 10

// Call runs one tool call for c: resolve the path or alias, decode the
// arguments, apply the workspace's policies, resolve the credential, check
// the arguments against the input schema, hold the call for a person's
// approval when a policy says so, execute, shape the result, and record
// the call in the audit (one row; a held call leaves a pending row when it
// is held and another when it runs or is refused).
//
// Whatever the upstream answered, errors included, comes back as a result
// (IsError for failures), scrubbed of the credential's secrets; so do a
// policy's refusal and a held call's pending handle (see [PendingResult]).
// A path the workspace does not see is a [*NotFoundError] and arguments
// that do not fit are an [*InvalidArgumentsError]; nothing is sent
// upstream then, and nobody is asked to approve a call that cannot run.
// Other errors are toolgate's own failures (the database unreachable).
func (g *Gateway) Call(ctx context.Context, c Caller, path string, args json.RawMessage, progress Progress) (*mcp.CallToolResult, error) {
	rec := audit.Call{OrgID: c.OrgID, WorkspaceID: c.WorkspaceID, KeyID: c.KeyID, UserID: c.UserID, Via: c.Via,
		Tool: path, StartedAt: time.Now()}
	res, err := g.call(ctx, c, path, args, progress, &rec)
	if rec.Outcome != "" {
		if rec.Arguments == nil {
			rec.Arguments = RedactArguments(args)
		}
		g.record(rec)
	}
	return res, err
}

// record hands a finished row to the recorder.
func (g *Gateway) record(rec audit.Call) {
	if g.opts.Recorder == nil {
		return
	}
	rec.Duration = time.Since(rec.StartedAt)
	rec.Error = cut(rec.Error, maxAuditError)
	g.opts.Recorder.Record(rec)
}

// call is Call without the recording; it fills rec as it learns, and
// leaves rec.Outcome empty when the call has nothing (more) to record.
func (g *Gateway) call(ctx context.Context, c Caller, path string, args json.RawMessage, progress Progress, rec *audit.Call) (*mcp.CallToolResult, error) {
	// 1. Resolve the path, with the source, the credential and the policy
	// versions, in one query.
	t, err := g.callTool(ctx, c, path)
	if errors.Is(err, db.ErrNotFound) || err == nil && !t.SourceEnabled {
		nf := g.notFound(ctx, c, path)
		rec.Outcome, rec.Error = audit.OutcomeNotFound, nf.Error()
		return nil, nf
	}
	if err != nil {
		rec.Outcome, rec.Error = audit.OutcomeError, "toolgate could not look up the tool"
		return nil, fmt.Errorf("look up tool %q: %w", path, err)
	}
	rec.SourceID = t.SourceID // rec.Tool stays the path as asked, alias or not
	tp := g.toolPlan(&t)

	// 2. Arguments, decoded (rules read them).
	v, err := decodeArguments(args)
	if err != nil {
		rec.Arguments = notJSON(args)
		return nil, g.invalid(rec, t.Path, []string{"(arguments): not JSON: " + err.Error()}, nil)
	}
	obj, isObject := v.(map[string]any)

	// 3. Policy (arguments that are not an object are refused below).
	var d policy.Decision
	if isObject {
		if d, err = g.decide(ctx, c, &t, tp, obj); err != nil {
			rec.Outcome, rec.Error = audit.OutcomeError, "toolgate could not load the workspace's policies"
			return nil, err
		}
		if d.Effect == policy.Deny {
			text := deniedText(t.Path, d)
			rec.Outcome, rec.Error = audit.OutcomeDenied, text
			return errorResult(text), nil
		}
	}

	// 4. Credential.
	sp := g.sourcePlan(c.OrgID, &t)
	cred, credID, err := g.credential(ctx, c.OrgID, &t, sp)
	if err != nil {
		rec.Outcome, rec.Error = audit.OutcomeError, "toolgate could not open the source's credential"
		return nil, err
	}
	auth := cred.auth

	// 5. Arguments against the schema.
	if g.opts.Recorder != nil || d.Effect == policy.RequireApproval {
		rec.Arguments = redactArguments(args, v, auth)
	}
	if !isObject {
		return nil, g.invalid(rec, t.Path, []string{fmt.Sprintf("(arguments): must be an object, not %s", jsonKind(v))}, auth)
	}
	if tp.schema != nil && !tp.flat.passes(obj) {
		if p := problems(tp.schema, obj); len(p) > 0 {
			return nil, g.invalid(rec, t.Path, p, auth)
		}
	}

	// 6. Approval.
	if d.Effect == policy.RequireApproval {
		if c.NoHold {
			rec.Outcome = ""
			return nil, ErrWouldHold
		}
		return g.hold(ctx, c, &t, d, args, progress, rec)
	}

	// 7. Execute, shape (each executor scrubs its own text; the audit
	// gets the same) and record.
	return g.execute(ctx, &t, tp, sp, cred, credID, obj, args, progress, rec)
}

// execute sends a call that passed every check upstream.
func (g *Gateway) execute(ctx context.Context, t *db.CallTool, tp *toolPlan, sp *sourcePlan, cred *authEntry, credID string,
	obj map[string]any, args json.RawMessage, progress Progress, rec *audit.Call) (*mcp.CallToolResult, error) {
	auth := cred.auth
	x := exec{g: g, t: t, tool: tp, src: sp, auth: auth, credID: credID, fingerprint: cred.fingerprint,
		args: obj, raw: args, progress: progress}
	if tp.refErr != nil || sp.err != nil {
		x.fail(audit.OutcomeError, errors.Join(tp.refErr, sp.err).Error())
	} else {
		switch sources.Type(t.SourceType) {
		case sources.TypeOpenAPI:
			x.openAPI(ctx)
		case sources.TypeGraphQL:
			x.graphQL(ctx)
		case sources.TypeMCP:
			x.mcp(ctx)
		default:
			x.fail(audit.OutcomeError, fmt.Sprintf("toolgate cannot call tools of type %q", t.SourceType))
		}
	}
	if x.invalid != nil {
		return nil, g.invalid(rec, t.Path, x.invalid, auth)
	}
	rec.Outcome, rec.Error, rec.UpstreamStatus = x.outcome, auth.Redact(x.errText), x.status
	return x.result, nil
}

// invalid records and returns arguments that do not fit; the audit's copy
// of the problems is scrubbed of the credential's secrets.
func (g *Gateway) invalid(rec *audit.Call, path string, problems []string, auth *sources.Auth) error {
	err := &InvalidArgumentsError{Path: path, Problems: problems}
	rec.Outcome, rec.Error = audit.OutcomeInvalid, auth.Redact(err.Error())
	return err
}

// errorResult is a tool error the agent reads.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// jsonKind names a decoded JSON value's type.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
