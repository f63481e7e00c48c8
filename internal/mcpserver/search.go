package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/gateway"
)

// searchInstructions tell an agent how to use search mode; the tools'
// own descriptions stay short.
var searchInstructions = `toolgate gives you the tools of one workspace: HTTP APIs (OpenAPI), GraphQL endpoints and MCP servers, behind one endpoint.

Work in three steps:
1. search_tools with a few words about the task ("create issue", "weather forecast"). Results are tool paths such as github.issues.create, best first, with a short description and a score.
2. describe_tool with a path from the results. It returns the full description and the JSON Schema of the arguments (and of the result, when the tool declares one). An unknown path returns up to five similar paths.
3. call_tool with the path and an arguments object that matches the schema. The answer is the tool's own result. Arguments that do not match the schema are refused with every problem listed, before anything reaches the upstream.

Paths are "namespace.name"; the namespace is the source. search_tools accepts source (a source name or id) to stay within one source.
Answers longer than the workspace's limit are cut, and say so. Errors from an upstream come back as tool errors with the HTTP status and an excerpt of the body.

` + approvalInstructions

// directInstructions tell an agent what direct mode is.
var directInstructions = `toolgate gives you the tools of one workspace: HTTP APIs (OpenAPI), GraphQL endpoints and MCP servers, behind one endpoint.

Every tool is listed directly. A tool's name is its toolgate path with dots written as "__" (github__issues__create is github.issues.create); very long names end in a short hash. Tool descriptions are shortened; the argument schemas are complete.
Arguments that do not match a tool's schema are refused with every problem listed, before anything reaches the upstream. Answers longer than the workspace's limit are cut, and say so. Errors from an upstream come back as tool errors with the HTTP status and an excerpt of the body.
The list changes when the workspace's sources change; you are notified with notifications/tools/list_changed.

` + approvalInstructions

// approvalInstructions explain held calls, in both modes.
const approvalInstructions = `The workspace's policies may refuse a call (a tool error says why) or hold it for a person's approval. A held call waits for the decision for a while, sending progress notifications; if nobody decides in time, it returns status "pending" with an approval_id (not an error: nothing has run). Get the outcome later with get_approval {"approval_id": ...}: once approved, the call runs exactly once, with the arguments that were approved.`

type searchArgs struct {
	Query  string `json:"query" jsonschema:"a few words about what you want to do"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many results, 1 to 50 (default 10)"`
	Source string `json:"source,omitempty" jsonschema:"only tools of this source (its name or id)"`
}

type searchResult struct {
	Path        string  `json:"path"`
	Description string  `json:"description"`
	Source      string  `json:"source"`
	Score       float64 `json:"score"`
}

type searchOut struct {
	Results []searchResult `json:"results"`
}

type describeArgs struct {
	Path string `json:"path" jsonschema:"a tool path from search_tools, e.g. github.issues.create"`
}

// newSearchServer is search mode's server: three meta-tools over the
// gateway, the same for every workspace (the caller picks the workspace).
func (h *Handler) newSearchServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "toolgate", Title: "toolgate", Version: h.opts.Version}, h.serverOptions(searchInstructions))
	s.AddReceivingMiddleware(h.trackLogLevel)
	falseVal := false
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &falseVal}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "search_tools",
		Title:       "Search tools",
		Description: "Find tools of this workspace by what they do. Returns tool paths, descriptions and scores, best first.",
		Annotations: readOnly,
	}, h.searchTools)
	s.AddTool(&mcp.Tool{
		Name:        "describe_tool",
		Title:       "Describe a tool",
		Description: "Full description and argument schema of one tool path; suggests similar paths when it is unknown.",
		Annotations: readOnly,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"a tool path from search_tools, e.g. github.issues.create"}},"required":["path"],"additionalProperties":false}`),
	}, h.describeTool)
	s.AddTool(&mcp.Tool{
		Name:        "call_tool",
		Title:       "Call a tool",
		Description: "Call a tool by path with arguments matching its schema (see describe_tool). Returns the tool's result. With approval_id: the outcome of a call held for approval.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the tool's path"},"arguments":{"type":"object","description":"the tool's arguments, matching its input schema"},"approval_id":{"type":"string","description":"the approval_id of an earlier call held for approval, to get its outcome"}},"required":["path"],"additionalProperties":false}`),
	}, h.callTool)
	h.addGetApproval(s)
	return s
}

func (h *Handler) searchTools(ctx context.Context, req *mcp.CallToolRequest, in searchArgs) (*mcp.CallToolResult, searchOut, error) {
	c, ok := callerOf(req.Extra)
	if !ok {
		return nil, searchOut{}, errors.New("no caller")
	}
	if strings.TrimSpace(in.Query) == "" {
		return toolError("query is required: a few words about what you want to do"), searchOut{}, nil
	}
	if in.Limit < 0 || in.Limit > 50 {
		return toolError(fmt.Sprintf("limit must be from 1 to 50 (got %d)", in.Limit)), searchOut{}, nil
	}
	sourceID, err := h.sourceID(ctx, c, in.Source)
	if err != nil {
		return toolError(err.Error()), searchOut{}, nil
	}
	hits, err := h.opts.Gateway.Search(ctx, c.gatewayCaller(), in.Query, in.Limit, sourceID)
	if err != nil {
		return nil, searchOut{}, err
	}
	out := searchOut{Results: make([]searchResult, 0, len(hits))}
	for _, hit := range hits {
		out.Results = append(out.Results, searchResult{Path: hit.Path, Description: short(hit.Description), Source: hit.SourceName, Score: hit.Score})
	}
	return nil, out, nil
}

// sourceID turns search_tools' source (a name, slug or id) into an id.
func (h *Handler) sourceID(ctx context.Context, c caller, source string) (string, error) {
	source = strings.TrimSpace(source)
	if source == "" {
		return "", nil
	}
	ws := c.grant.Workspace.ID
	list, err := h.opts.Store.Sources(ctx, c.grant.Org.ID, db.SourceFilter{WorkspaceID: &ws})
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(list))
	for _, src := range list {
		if src.ID == source || strings.EqualFold(src.Name, source) || strings.EqualFold(src.Slug, source) {
			return src.ID, nil
		}
		names = append(names, src.Slug)
	}
	return "", fmt.Errorf("no source %q in this workspace; sources: %s", source, strings.Join(names, ", "))
}

func (h *Handler) describeTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, ok := callerOf(req.Extra)
	if !ok {
		return nil, errors.New("no caller")
	}
	var in describeArgs
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || strings.TrimSpace(in.Path) == "" {
		return toolError("path is required: a tool path from search_tools"), nil
	}
	t, err := h.opts.Gateway.Describe(ctx, c.gatewayCaller(), strings.TrimSpace(in.Path))
	var nf *gateway.NotFoundError
	if errors.As(err, &nf) {
		return notFound(nf), nil
	} else if err != nil {
		return nil, err
	}
	d := struct {
		Path            string          `json:"path"`
		Title           string          `json:"title,omitempty"`
		Description     string          `json:"description"`
		Source          string          `json:"source"`
		InputSchema     json.RawMessage `json:"input_schema"`
		OutputSchema    json.RawMessage `json:"output_schema,omitempty"`
		Annotations     json.RawMessage `json:"annotations,omitempty"`
		DefaultApproval string          `json:"default_approval"`
		Policy          string          `json:"policy,omitempty"`
	}{t.Path, t.Title, t.Description, t.SourceName, t.InputSchema, present(t.OutputSchema), present(t.Annotations), t.DefaultApproval, t.Policy}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}

func (h *Handler) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in, bad := parseCallTool(req.Params.Arguments)
	if bad != nil {
		return bad, nil
	}
	if in.ApprovalID != "" {
		return h.resume(ctx, req, in.ApprovalID, in.Path, in.Arguments)
	}
	return h.call(ctx, req, in.Path, in.Arguments)
}

// callToolInput is call_tool's arguments, trimmed.
type callToolInput struct {
	Path       string          `json:"path"`
	Arguments  json.RawMessage `json:"arguments"`
	ApprovalID string          `json:"approval_id"`
}

// parseCallTool reads call_tool's arguments, or the tool error that
// refuses them.
func parseCallTool(raw json.RawMessage) (callToolInput, *mcp.CallToolResult) {
	var in callToolInput
	if err := json.Unmarshal(raw, &in); err != nil || strings.TrimSpace(in.Path) == "" {
		return in, toolError("path is required: a tool path from search_tools; arguments is an object")
	}
	in.Path, in.ApprovalID = strings.TrimSpace(in.Path), strings.TrimSpace(in.ApprovalID)
	return in, nil
}

// call runs one tool through the gateway.
func (h *Handler) call(ctx context.Context, req *mcp.CallToolRequest, path string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c, ok := callerOf(req.Extra)
	if !ok {
		return nil, errors.New("no caller")
	}
	res, err := h.opts.Gateway.Call(ctx, withElicitation(c.gatewayCaller(), req), path, args, progressOf(ctx, req))
	return h.callOutcome(path, res, err), nil
}

// callOutcome turns a gateway call's refusals into tool errors an agent
// can act on.
func (h *Handler) callOutcome(path string, res *mcp.CallToolResult, err error) *mcp.CallToolResult {
	var nf *gateway.NotFoundError
	var inv *gateway.InvalidArgumentsError
	switch {
	case errors.As(err, &nf):
		return notFound(nf)
	case errors.As(err, &inv):
		return toolError(inv.Error())
	case err != nil:
		h.log.Error("mcp: call", "tool", path, "error", err)
		return toolError("toolgate could not run the call: " + err.Error())
	}
	return res
}

// progressOf relays upstream progress to the agent when it asked for it.
func progressOf(ctx context.Context, req *mcp.CallToolRequest) gateway.Progress {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	return func(progress, total float64, message string) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: progress, Total: total, Message: message,
		})
	}
}

func notFound(nf *gateway.NotFoundError) *mcp.CallToolResult {
	res := toolError(nf.Error())
	res.StructuredContent = map[string]any{"error": "not_found", "path": nf.Path, "suggestions": nonNil(nf.Suggestions)}
	return res
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func present(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" || string(b) == "{}" {
		return nil
	}
	return b
}

// maxShort is the longest description an agent sees in a list.
const maxShort = 240

// short keeps a description's first paragraph, at most maxShort characters.
func short(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i > 0 {
		s = s[:i]
	}
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= maxShort {
		return s
	}
	r := []rune(s)[:maxShort-1]
	if i := strings.LastIndexByte(string(r), ' '); i > maxShort/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

// trackLogLevel keeps a session's logging/setLevel for every replica.
func (h *Handler) trackLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "logging/setLevel" && err == nil {
			if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && r.Session != nil && r.Params != nil {
				h.sessions.setLevel(ctx, r.Session.ID(), r.Params.Level)
			}
		}
		return res, err
	}
}
