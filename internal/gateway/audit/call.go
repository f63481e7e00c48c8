// Package audit records tool calls: each call through the gateway becomes
// one tool_calls row, written asynchronously in batches so no call waits on
// the database, and flushed on shutdown so none is lost.
package audit

import (
	"encoding/json"
	"time"
)

// Outcomes of a call.
const (
	// OutcomeOK: the upstream answered and the answer was not an error.
	OutcomeOK = "ok"
	// OutcomeError: the upstream answered with an error (a non-2xx status,
	// GraphQL errors without data, an MCP tool error) or could not be reached.
	OutcomeError = "error"
	// OutcomeTimeout: the upstream did not answer in time.
	OutcomeTimeout = "timeout"
	// OutcomeInvalid: the arguments failed the tool's input schema; nothing
	// was sent upstream.
	OutcomeInvalid = "invalid"
	// OutcomeNotFound: no tool has that path in the caller's workspace.
	OutcomeNotFound = "not_found"
	// OutcomeDenied: a policy refused the call, or a person denied it.
	OutcomeDenied = "denied"
	// OutcomePending: a policy held the call for a person's approval;
	// nothing was sent upstream yet. The approved call's execution gets a
	// row of its own with the same approval id.
	OutcomePending = "pending"
	// OutcomeExpired: nobody decided on the held call in time.
	OutcomeExpired = "expired"
)

// Outcomes lists every outcome, for filters.
var Outcomes = []string{OutcomeOK, OutcomeError, OutcomeTimeout, OutcomeInvalid, OutcomeNotFound, OutcomeDenied,
	OutcomePending, OutcomeExpired}

// Call is one tool call as the audit keeps it. Arguments are already
// redacted and capped by the gateway; Error is already scrubbed of secrets.
type Call struct {
	OrgID       int64
	WorkspaceID int64
	// KeyID is the workspace API key the agent used; nil for the console.
	KeyID *int64
	// UserID is the key's owner, or the console user.
	UserID int64
	// Via is "mcp" or "console".
	Via string
	// Tool is the path the caller asked for; SourceID is empty when the
	// path matched no tool.
	Tool     string
	SourceID string
	// Arguments is a JSON object, secret-looking keys replaced by
	// "[redacted]", at most MaxArgumentBytes.
	Arguments json.RawMessage
	Outcome   string
	// Error says what went wrong, for a person; empty when OK.
	Error string
	// UpstreamStatus is the HTTP status of an OpenAPI or GraphQL upstream;
	// 0 when there was none (MCP upstreams, calls that never left).
	UpstreamStatus int
	// ApprovalID links the rows of a call held for approval: the pending
	// row and the execution's.
	ApprovalID string
	StartedAt  time.Time
	Duration   time.Duration
}

// MaxArgumentBytes caps the arguments a row keeps.
const MaxArgumentBytes = 8 << 10
