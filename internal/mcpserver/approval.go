package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway"
)

// GetApprovalTool is the meta-tool both modes offer for the outcome of a
// call held for approval. Direct-mode names of registry tools contain
// "__" or end in a hash, so none can take this name.
const GetApprovalTool = "get_approval"

// addGetApproval adds get_approval to s.
func (h *Handler) addGetApproval(s *mcp.Server) {
	falseVal := false
	s.AddTool(&mcp.Tool{
		Name:        GetApprovalTool,
		Title:       "Get the outcome of a held call",
		Description: "Outcome of a call you made that was held for a person's approval, by its approval_id: the tool's result once approved (it runs once), the refusal, or pending again.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: &falseVal},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"approval_id":{"type":"string","description":"the approval_id a held call returned (apr_...)"}},"required":["approval_id"],"additionalProperties":false}`),
	}, h.getApproval)
}

func (h *Handler) getApproval(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		ApprovalID string `json:"approval_id"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || strings.TrimSpace(in.ApprovalID) == "" {
		return toolError("approval_id is required: the approval_id a held call returned (apr_...)"), nil
	}
	return h.resume(ctx, req, strings.TrimSpace(in.ApprovalID), "", nil)
}

// resume continues a held call through the gateway: its outcome, or a
// pending result again.
func (h *Handler) resume(ctx context.Context, req *mcp.CallToolRequest, id, path string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c, ok := callerOf(req.Extra)
	if !ok {
		return nil, errors.New("no caller")
	}
	res, err := h.opts.Gateway.Resume(ctx, c.gatewayCaller(), id, path, args, progressOf(ctx, req))
	var nf *gateway.ApprovalNotFoundError
	switch {
	case errors.As(err, &nf):
		res := toolError(nf.Error() + "; use the approval_id a held call of yours (any of your keys in this workspace) returned")
		res.StructuredContent = map[string]any{"error": "not_found", "approval_id": id}
		return res, nil
	case err != nil:
		h.log.Error("mcp: resume held call", "approval", id, "error", err)
		return toolError("toolgate could not get the outcome of approval " + id + ": " + err.Error()), nil
	}
	return res, nil
}
