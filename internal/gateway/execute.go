package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/gateway/httpcall"
	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/sources"
)

// exec is one call being executed: its inputs, then its outcome.
type exec struct {
	g           *Gateway
	t           *db.CallTool
	tool        *toolPlan
	src         *sourcePlan
	auth        *sources.Auth
	credID      string
	fingerprint string
	args        map[string]any
	raw         json.RawMessage
	progress    Progress

	result  *mcp.CallToolResult
	outcome string
	errText string
	status  int
	// invalid lists argument problems found while building the request.
	invalid []string
}

// fail ends the call with a tool error whose text is scrubbed.
func (x *exec) fail(outcome, text string) {
	text = x.auth.Redact(text)
	x.result, x.outcome, x.errText = errorResult(text), outcome, text
}

// answer ends the call with what the upstream said.
func (x *exec) answer(res *mcp.CallToolResult, status int) {
	x.result, x.status, x.outcome = res, status, audit.OutcomeOK
	if res.IsError {
		x.outcome, x.errText = audit.OutcomeError, resultText(res)
	}
}

// errHTTPTimeout marks an OpenAPI or GraphQL call that ran out of time.
var errHTTPTimeout = errors.New("toolgate's HTTP call timeout")

// send sends req within the HTTP timeout and reads the answer, up to the
// result cap; the bool reports that it went through (otherwise the call
// has failed already).
func (x *exec) send(ctx context.Context, build func(context.Context) (*http.Request, error), origin string) (httpcall.Result, bool) {
	ctx, cancel := context.WithTimeoutCause(ctx, x.g.opts.HTTPTimeout, errHTTPTimeout)
	defer cancel()
	req, err := build(ctx)
	if err != nil {
		var argErr *httpcall.ArgError
		if errors.As(err, &argErr) {
			x.invalid = argErr.Problems
			return httpcall.Result{}, false
		}
		x.fail(audit.OutcomeError, "the call cannot be made: "+err.Error())
		return httpcall.Result{}, false
	}
	res, err := x.client(origin).Do(req)
	if err != nil {
		x.transportFailure(ctx, err)
		return httpcall.Result{}, false
	}
	r := httpcall.ReadResult(res, x.g.opts.MaxResultBytes)
	if r.Err != nil && errors.Is(context.Cause(ctx), errHTTPTimeout) {
		x.status = r.Status
		x.fail(audit.OutcomeTimeout, fmt.Sprintf("the upstream began answering (%s) but did not finish within %s (toolgate's time limit for OpenAPI and GraphQL calls, which its operator sets)", r.StatusLine(), x.g.opts.HTTPTimeout))
		return httpcall.Result{}, false
	}
	x.status = r.Status
	return r, true
}

// transportFailure says why a request got no answer.
func (x *exec) transportFailure(ctx context.Context, err error) {
	switch {
	case errors.Is(context.Cause(ctx), errHTTPTimeout):
		x.fail(audit.OutcomeTimeout, fmt.Sprintf("the upstream did not answer within %s (toolgate's time limit for OpenAPI and GraphQL calls, which its operator sets)", x.g.opts.HTTPTimeout))
	case ctx.Err() != nil:
		x.fail(audit.OutcomeError, "the call was cancelled before the upstream answered")
	default:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the agent's own request; the cause is what matters
		}
		x.fail(audit.OutcomeError, "the upstream could not be reached: "+err.Error())
	}
}

// client is the gateway's HTTP client, which on a redirect away from the
// upstream's origin drops the credential's headers and query parameters:
// they go to the upstream only.
func (x *exec) client(origin string) *http.Client {
	if x.auth.Empty() {
		return x.g.client
	}
	c := *x.g.client
	check, auth := c.CheckRedirect, x.auth
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if check != nil {
			if err := check(req, via); err != nil {
				return err
			}
		}
		if netguard.Origin(req.URL) != origin {
			for k := range auth.Headers {
				req.Header.Del(k)
			}
			if len(auth.Query) > 0 && req.URL.RawQuery != "" {
				q := req.URL.Query()
				for k := range auth.Query {
					q.Del(k)
				}
				req.URL.RawQuery = q.Encode()
			}
		}
		return nil
	}
	return &c
}

// originOf is the origin credentials may go to.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return netguard.Origin(u)
}

// openAPI calls an OpenAPI operation.
func (x *exec) openAPI(ctx context.Context) {
	base := x.src.baseURL
	if base == "" {
		base = x.t.SourceBaseURL
	}
	r, ok := x.send(ctx, func(ctx context.Context) (*http.Request, error) {
		return httpcall.BuildRequest(ctx, x.tool.openapi, base, x.args, x.auth, x.tool.binary...)
	}, originOf(base))
	if !ok {
		return
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: x.auth.Redact(r.Text())}}, IsError: !r.OK()}
	if r.OK() && x.tool.hasOutput && !r.Truncated {
		res.StructuredContent = x.structured(r.Body)
	}
	x.answer(res, r.Status)
}

// structured is a JSON object body, scrubbed, as structured content; nil
// for anything else.
func (x *exec) structured(body []byte) any {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		return nil
	}
	if body = redactJSON(x.auth, body); body == nil {
		return nil
	}
	return json.RawMessage(body)
}

// graphQL posts the tool's document with the arguments as its variables
// (the raw tool: the document, variables and operation name it is given).
func (x *exec) graphQL(ctx context.Context) {
	endpoint := x.src.endpoint
	if endpoint == "" {
		endpoint = x.t.SourceBaseURL
	}
	var body []byte
	if x.tool.gqlPrefix != nil {
		vars := bytes.TrimSpace(x.raw)
		if len(vars) == 0 || string(vars) == "null" {
			vars = []byte("{}")
		}
		body = make([]byte, 0, len(x.tool.gqlPrefix)+len(vars)+1)
		body = append(append(append(body, x.tool.gqlPrefix...), vars...), '}')
	} else {
		q := map[string]any{"query": x.args["query"]}
		if v := x.args["variables"]; v != nil {
			q["variables"] = v
		}
		if v, _ := x.args["operationName"].(string); v != "" {
			q["operationName"] = v
		}
		body = marshal(q)
	}
	r, ok := x.send(ctx, func(ctx context.Context) (*http.Request, error) {
		if strings.TrimSpace(endpoint) == "" {
			return nil, errors.New("the source has no endpoint: set one for calls to work")
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("the source's endpoint %q is not usable: %w", endpoint, err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/graphql-response+json, application/json;q=0.9")
		x.auth.Apply(req)
		return req, nil
	}, originOf(endpoint))
	if !ok {
		return
	}
	var answer struct {
		Data   json.RawMessage   `json:"data"`
		Errors []json.RawMessage `json:"errors"`
	}
	isGraphQL := !r.Truncated && json.Unmarshal(r.Body, &answer) == nil && (answer.Data != nil || answer.Errors != nil)
	text := r.Text()
	failed := !r.OK()
	switch {
	case isGraphQL && !db.Present(answer.Data) && len(answer.Errors) > 0:
		failed = true
	case !isGraphQL && r.OK() && !r.Truncated:
		failed = true
		text += "\n[this is not a GraphQL response: it has neither data nor errors]"
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: x.auth.Redact(text)}}, IsError: failed}
	if !failed && isGraphQL && len(answer.Errors) == 0 && x.tool.hasOutput {
		res.StructuredContent = x.structured(answer.Data)
	}
	x.answer(res, r.Status)
}

// mcp calls the upstream MCP tool through the session pool.
func (x *exec) mcp(ctx context.Context) {
	cfg := x.src.mcp
	req := mcppool.Request{
		Key:            mcppool.Key{SourceID: x.t.SourceID, CredentialID: x.credID, Credential: x.fingerprint, Config: x.src.mcpConfigKey},
		Config:         cfg,
		Auth:           x.auth,
		Tool:           x.tool.mcpTool,
		Args:           x.args,
		ConnectTimeout: time.Duration(cfg.ConnectTimeoutSeconds) * time.Second,
		CallTimeout:    time.Duration(cfg.CallTimeoutSeconds) * time.Second,
	}
	if x.progress != nil {
		req.Progress = x.progress
	}
	res, err := x.g.pool.Do(ctx, req)
	if err != nil {
		var te *mcppool.TimeoutError
		if errors.As(err, &te) {
			x.fail(audit.OutcomeTimeout, err.Error()+" ("+timeoutOrigin(te, cfg)+")")
			return
		}
		x.fail(audit.OutcomeError, err.Error())
		return
	}
	x.answer(x.shapeMCP(res), 0)
}

// timeoutOrigin says which limit ran out and where it is set.
func timeoutOrigin(te *mcppool.TimeoutError, cfg *sources.MCPConfig) string {
	switch {
	case te.Call && cfg.CallTimeoutSeconds > 0:
		return "the source's call timeout; change it in the source's settings"
	case te.Call:
		return "the default call timeout; a source can set its own call timeout, up to 600 s, in its settings"
	case cfg.ConnectTimeoutSeconds > 0:
		return "the source's connect timeout; change it in the source's settings"
	}
	return "the default connect timeout; a source can set its own connect timeout, up to 600 s, in its settings"
}

// shapeMCP scrubs an upstream MCP result of the credential's secrets and
// caps its text at the result limit, saying where it was cut. Images,
// audio and blobs pass through unchanged.
func (x *exec) shapeMCP(res *mcp.CallToolResult) *mcp.CallToolResult {
	limit := x.g.opts.MaxResultBytes
	var total int64
	for _, c := range res.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			total += int64(len(v.Text))
		case *mcp.EmbeddedResource:
			if v.Resource != nil {
				total += int64(len(v.Resource.Text))
			}
		}
	}
	var structured []byte
	compacted := false
	switch v := res.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		structured = v // as the upstream sent it
		if int64(len(v)) > limit {
			// Measured, and sent, without the upstream's indentation, as
			// the SDK's encoder would write it.
			var buf bytes.Buffer
			if json.Compact(&buf, v) == nil {
				structured, compacted = buf.Bytes(), true
			}
		}
	default:
		structured, _ = json.Marshal(v)
	}
	if total <= limit && int64(len(structured)) <= limit && x.auth.Empty() && !compacted {
		return res
	}
	out := *res
	if compacted {
		out.StructuredContent = json.RawMessage(structured)
	}
	out.Content = make([]mcp.Content, 0, len(res.Content))
	budget := limit
	shape := func(s string) string {
		if int64(len(s)) > budget {
			kept := cut(s, int(max(budget, 0)))
			s = strings.TrimSuffix(kept, "…") + fmt.Sprintf("\n[truncated: the upstream's text came to %d bytes; showed the first %d]", total, limit)
			budget = 0
		} else {
			budget -= int64(len(s))
		}
		return x.auth.Redact(s)
	}
	for _, c := range res.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			if budget <= 0 && v.Text != "" {
				continue // the note is already in an earlier part
			}
			t := *v
			t.Text = shape(v.Text)
			out.Content = append(out.Content, &t)
		case *mcp.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				if budget <= 0 {
					continue
				}
				r, e := *v.Resource, *v
				r.Text = shape(v.Resource.Text)
				e.Resource = &r
				out.Content = append(out.Content, &e)
				continue
			}
			out.Content = append(out.Content, c)
		default:
			out.Content = append(out.Content, c)
		}
	}
	switch {
	case int64(len(structured)) > limit:
		// Structured content cannot be cut and stay valid: it is left out.
		out.StructuredContent = nil
		out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("[structured content of %d bytes left out: over the %d-byte result limit]", len(structured), limit)})
	case structured != nil && !x.auth.Empty():
		if red := redactJSON(x.auth, structured); red == nil {
			out.StructuredContent = nil
		} else if !bytes.Equal(red, structured) {
			out.StructuredContent = json.RawMessage(red)
		}
	}
	return &out
}

// resultText is the text of a result, for the audit's error column.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(cut(t.Text, maxAuditError))
			if b.Len() >= maxAuditError {
				break
			}
		}
	}
	return b.String()
}
