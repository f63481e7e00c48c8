package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/gateway"
)

// elicitPrefix starts the comment of a decision made in the agent's
// client, so the approval and its audit event say where it was made.
const elicitPrefix = "Decided in the agent's client (MCP elicitation)"

// approveSchema is what the agent's client is asked for: approve or not,
// and an optional comment.
var approveSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Approve this call",
			"description": "Run this call once, with exactly these arguments."},
		"comment": map[string]any{"type": "string", "title": "Comment",
			"description": "Why (optional); kept with the decision."},
	},
	"required": []string{"approve"},
}

// withElicitation returns c with an Ask that puts a held call to the
// agent's client by elicitation/create, when the request came over a live
// session whose client declared the elicitation capability; otherwise c
// as it is. Stateless requests (protocol 2026-07-28, or no session id)
// cannot carry a server-to-client request and are never asked.
func withElicitation(c gateway.Caller, req *mcp.CallToolRequest) gateway.Caller {
	if !canElicit(req) {
		return c
	}
	ss := req.Session
	c.Ask = func(ctx context.Context, a approvals.Approval) (bool, string, bool) {
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: elicitMessage(a), RequestedSchema: approveSchema})
		if err != nil {
			return false, "", false
		}
		return elicitAnswer(res)
	}
	return c
}

// canElicit reports whether the session of req can be asked: a session
// with an id (served by this replica's transport, not the stateless
// handler), of a protocol older than 2026-07-28, whose client declared
// form elicitation.
func canElicit(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil || req.Session.ID() == "" {
		return false
	}
	p := req.Session.InitializeParams()
	if p == nil || p.ProtocolVersion >= "2026-07-28" || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	// Neither mode named means form, for clients older than 2025-11-25.
	return e.Form != nil || e.URL == nil
}

// elicitMessage names the tool, the (redacted) arguments and the rule's
// reason.
func elicitMessage(a approvals.Approval) string {
	args := strings.TrimSpace(string(a.Arguments))
	if args == "" || args == "null" {
		args = "{}"
	}
	return fmt.Sprintf("toolgate holds a call to %s for approval (%s).\nArguments (secrets hidden): %s\n"+
		"Its rule lets you approve your own calls. Approve to run it once with exactly these arguments; "+
		"deny to refuse it. Cancel to leave it to the workspace's approvers (approval %s).",
		a.Tool, a.Reason, args, a.ID)
}

// elicitAnswer reads the client's answer: accept with approve true
// approves, accept with approve false and decline deny, anything else
// (cancel, a malformed answer) is no answer.
func elicitAnswer(res *mcp.ElicitResult) (approve bool, comment string, ok bool) {
	switch res.Action {
	case "decline":
		return false, elicitPrefix + ": declined.", true
	case "accept":
		v, isBool := res.Content["approve"].(bool)
		if !isBool {
			return false, "", false
		}
		comment = elicitPrefix + "."
		if s, _ := res.Content["comment"].(string); strings.TrimSpace(s) != "" {
			comment = elicitPrefix + ": " + strings.TrimSpace(s)
		}
		return v, comment, true
	}
	return false, "", false
}
