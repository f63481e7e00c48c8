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
	"github.com/toolgate/toolgate/internal/sources"
)

// maxAuditError caps the error text an audit row keeps.
const maxAuditError = 2 << 10

// Call runs one tool call for c: resolve the path or alias, authorize,
// resolve the credential, check the arguments against the input schema,
// execute, shape the result, and record the call in the audit (exactly
// one row, whatever happens).
//
// Whatever the upstream answered, errors included, comes back as a result
// (IsError for failures), scrubbed of the credential's secrets. A path
// the workspace does not see is a [*NotFoundError] and arguments that do
// not fit are an [*InvalidArgumentsError]; nothing is sent upstream then.
// Other errors are toolgate's own failures (the database unreachable).
func (g *Gateway) Call(ctx context.Context, c Caller, path string, args json.RawMessage, progress Progress) (*mcp.CallToolResult, error) {
	rec := audit.Call{OrgID: c.OrgID, WorkspaceID: c.WorkspaceID, KeyID: c.KeyID, UserID: c.UserID, Via: c.Via,
		Tool: path, StartedAt: time.Now()}
	res, err := g.call(ctx, c, path, args, progress, &rec)
	if g.opts.Recorder != nil {
		rec.Duration = time.Since(rec.StartedAt)
		if rec.Arguments == nil {
			rec.Arguments = RedactArguments(args)
		}
		rec.Error = cut(rec.Error, maxAuditError)
		g.opts.Recorder.Record(rec)
	}
	return res, err
}

// call is Call without the recording; it fills rec as it learns.
func (g *Gateway) call(ctx context.Context, c Caller, path string, args json.RawMessage, progress Progress, rec *audit.Call) (*mcp.CallToolResult, error) {
	// 1. Resolve the path, with the source and the credential, in one query.
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

	// 2. Policy.
	if err := g.authorize(ctx, c, &t); err != nil {
		rec.Outcome, rec.Error = audit.OutcomeDenied, err.Error()
		return errorResult(err.Error()), nil
	}

	// 3. Credential.
	sp := g.sourcePlan(c.OrgID, &t)
	cred, credID, err := g.credential(ctx, c.OrgID, &t, sp)
	if err != nil {
		rec.Outcome, rec.Error = audit.OutcomeError, "toolgate could not open the source's credential"
		return nil, err
	}
	auth := cred.auth

	// 4. Arguments.
	v, err := decodeArguments(args)
	if err != nil {
		rec.Arguments = notJSON(args)
		return nil, g.invalid(rec, t.Path, []string{"(arguments): not JSON: " + err.Error()}, auth)
	}
	if g.opts.Recorder != nil {
		rec.Arguments = redactArguments(args, v, auth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, g.invalid(rec, t.Path, []string{fmt.Sprintf("(arguments): must be an object, not %s", jsonKind(v))}, auth)
	}
	tp := g.toolPlan(&t)
	if tp.schema != nil {
		if p := problems(tp.schema, obj); len(p) > 0 {
			return nil, g.invalid(rec, t.Path, p, auth)
		}
	}

	// 5. Execute.
	x := exec{g: g, t: &t, tool: tp, src: sp, auth: auth, credID: credID, fingerprint: cred.fingerprint,
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

	// 6. Shape (each executor scrubs its own text; the audit gets the same).
	// 7. Record.
	rec.Outcome, rec.Error, rec.UpstreamStatus = x.outcome, auth.Redact(x.errText), x.status
	return x.result, nil
}

// authorize decides whether c may call t. Part 6 puts policy and approval
// here; for now every call is allowed. A non-nil error denies the call: its
// text goes to the caller as a tool error and to the audit as denied.
func (g *Gateway) authorize(ctx context.Context, c Caller, t *db.CallTool) error {
	return nil
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
