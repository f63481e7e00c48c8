// Package gateway is the one road from a caller to an upstream tool: the
// MCP endpoint and the console's "Try it" both call through it. A call
// resolves the path or alias in the caller's workspace, applies the
// workspace's policies (allow, deny, or hold for a person's approval),
// resolves the credential in Part 4's order (account, workspace,
// organization), validates the arguments against the tool's input schema,
// waits for the approval of a held call, executes (OpenAPI over HTTP,
// GraphQL POST, MCP via the session pool), shapes the result as MCP
// content, and records the call in the audit.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/h1"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/search"
)

// Where a call comes from.
const (
	ViaMCP     = "mcp"
	ViaConsole = "console"
)

// DefaultMaxResultBytes caps an upstream answer (TOOLGATE_MAX_RESULT_BYTES).
const DefaultMaxResultBytes = 1 << 20

// Caller is who makes a call and where: a workspace API key acting as its
// owner, or a console user.
type Caller struct {
	OrgID, WorkspaceID int64
	// UserID is the key's owner or the console user: their account
	// credentials apply and the audit names them.
	UserID int64
	// KeyID is the API key; nil for the console.
	KeyID *int64
	// Via is ViaMCP or ViaConsole.
	Via string

	// What policies read of the caller: the user's role in the
	// organization and email, and the key's name ("" for the console).
	Role, UserEmail, KeyName string
	// OrgSlug and WorkspaceSlug name the workspace in the console link of
	// a held call.
	OrgSlug, WorkspaceSlug string
	// NoApprovalWait makes a held call answer with its pending handle at
	// once instead of waiting Options.ApprovalWait (the console, whose web
	// requests cannot wait that long).
	NoApprovalWait bool
	// NoHold makes a call that would be held for approval return
	// [ErrWouldHold] before anything is held or recorded, so a caller that
	// cannot stream (the MCP endpoint's JSON fast path) can hand the call to
	// one that can (progress while waiting, elicitation).
	NoHold bool
	// Ask, when set, lets the caller decide its own held call (the agent's
	// client, through MCP elicitation). The gateway calls it only for a
	// request whose rule allows self-approval and that the caller may
	// decide, with a context bounded by Options.ApprovalWait; ok false means
	// no answer, and the call waits for a person as usual. comment is
	// recorded with the decision.
	Ask func(ctx context.Context, a approvals.Approval) (approve bool, comment string, ok bool)
}

// Recorder takes audit rows; it must not block.
type Recorder interface{ Record(audit.Call) }

// Options configure a [Gateway].
type Options struct {
	Store       *db.Store
	Credentials *credentials.Service
	// Index finds tools for search_tools and for suggestions.
	Index search.Index
	// Recorder receives one row per call; nil records nothing.
	Recorder Recorder
	// LookupCache serves tool lookups from memory while it listens for
	// the database's changes; nil reads the database on every call.
	LookupCache *LookupCache
	// AllowPrivateNetworks lets calls reach private and loopback upstreams.
	AllowPrivateNetworks bool
	// MaxResultBytes caps an upstream answer; 0 means DefaultMaxResultBytes.
	MaxResultBytes int64
	// HTTPTimeout bounds one OpenAPI or GraphQL call; 0 means 30 s.
	HTTPTimeout time.Duration
	// Pool tunes the MCP upstream sessions; its HTTPClient is set by New.
	Pool mcppool.Options
	// Policies loads the workspace's rules; nil applies every tool's
	// default alone.
	Policies Policies
	// Approvals holds calls a rule or a tool's default sends to a person;
	// without it such calls are refused.
	Approvals *approvals.Service
	// ApprovalWait is how long a held call waits for the decision before
	// it answers with its pending handle (TOOLGATE_APPROVAL_WAIT); 0
	// answers at once.
	ApprovalWait time.Duration
	// ApprovalURL is the console page of an approval, for people to
	// decide on; nil leaves the link out.
	ApprovalURL func(orgSlug, workspaceSlug, id string) string
	Version     string
	Logger      *slog.Logger
}

// Tool is a tool as describe_tool and direct mode present it.
type Tool struct {
	Path            string          `json:"path"`
	Aliases         []string        `json:"aliases,omitempty"`
	Title           string          `json:"title,omitempty"`
	Description     string          `json:"description"`
	SourceID        string          `json:"source_id"`
	SourceName      string          `json:"source_name"`
	SourceType      string          `json:"source_type"`
	InputSchema     json.RawMessage `json:"input_schema"`
	OutputSchema    json.RawMessage `json:"output_schema,omitempty"`
	Annotations     json.RawMessage `json:"annotations,omitempty"`
	DefaultApproval string          `json:"default_approval"`
	// Method is an OpenAPI operation's HTTP method, "" for other types.
	Method string `json:"method,omitempty"`
	// ApprovalOverride is the source's override of DefaultApproval, "" for
	// none.
	ApprovalOverride string `json:"approval_override,omitempty"`

	// Policy is the caller's effective decision on the tool before any
	// condition on arguments, in a sentence (Describe only).
	Policy string `json:"policy,omitempty"`

	annotations      map[string]any
	approvalOverride *string
}

// Progress receives an upstream's progress notifications during a call.
type Progress func(progress, total float64, message string)

// NotFoundError is a path that names no tool the caller's workspace sees
// (or only a tool of a disabled source). Suggestions are up to five paths
// that do exist, best first.
type NotFoundError struct {
	Path        string
	Suggestions []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no tool %q in this workspace", e.Path)
	if len(e.Suggestions) > 0 {
		msg += "; did you mean " + strings.Join(e.Suggestions, ", ") + "?"
	} else {
		msg += "; use search_tools to find one"
	}
	return msg
}

// InvalidArgumentsError lists every way the arguments fail the tool's
// input schema, one problem per entry ("/owner: missing property" style,
// the JSON pointer first). Nothing was sent upstream.
type InvalidArgumentsError struct {
	Path     string
	Problems []string
}

func (e *InvalidArgumentsError) Error() string {
	return fmt.Sprintf("arguments for %s do not match its input schema:\n- %s", e.Path, strings.Join(e.Problems, "\n- "))
}

// ErrWouldHold is what a call with [Caller.NoHold] returns when a person
// must approve it first; nothing was held, sent or recorded.
var ErrWouldHold = errors.New("the call must be held for approval")

// DefaultHTTPTimeout bounds an OpenAPI or GraphQL call when
// [Options.HTTPTimeout] is 0.
const DefaultHTTPTimeout = 30 * time.Second

// Gateway runs calls. It is safe for concurrent use.
type Gateway struct {
	opts Options
	pool *mcppool.Pool
	// client sends OpenAPI and GraphQL calls: netguard's rules, redirects
	// limited, no whole-request limit of its own (HTTPTimeout bounds each
	// call through its context).
	client *http.Client
	// stream carries remote MCP sessions, whose streams outlive any
	// request timeout; the pool bounds connecting and each call.
	stream *http.Client

	sources cache[string, *sourcePlan]
	tools   cache[toolKey, *toolPlan]
	auths   cache[string, *authEntry]
	// policies holds each workspace's compiled rules at their versions.
	policies    cache[[2]int64, *policyEntry]
	policyLoads policyLoads
	touches     touches
	lookups     lookups
}

// New builds a gateway; Close stops its upstream sessions.
func New(o Options) *Gateway {
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.HTTPTimeout <= 0 {
		o.HTTPTimeout = DefaultHTTPTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{
		client: netguard.NewClient(netguard.Options{AllowPrivate: o.AllowPrivateNetworks, Timeout: -1}),
		stream: netguard.NewClient(netguard.Options{AllowPrivate: o.AllowPrivateNetworks, Timeout: -1}),
	}
	for _, c := range []*http.Client{g.client, g.stream} {
		if t, ok := c.Transport.(*http.Transport); ok {
			// Many agents call one upstream at once: keep their connections.
			t.MaxIdleConnsPerHost = 64
			// Calls are short exchanges on kept-alive connections; h1 runs
			// them on the caller's goroutine (see its package comment) and
			// leaves the rest, with the dialer and its checks, to t.
			c.Transport = h1.New(t)
		}
	}
	if o.Pool.HTTPClient == nil {
		o.Pool.HTTPClient = func() *http.Client { return g.stream }
	}
	if o.Pool.ClientVersion == "" {
		o.Pool.ClientVersion = o.Version
	}
	g.opts = o
	g.pool = mcppool.New(o.Pool)
	g.touches.seen = map[string]time.Time{}
	g.lookups.running, g.lookups.next = map[lookupKey]*lookup{}, map[lookupKey]*lookup{}
	g.policyLoads.running = map[[2]int64]*policyLoad{}
	return g
}

// Close stops every pooled upstream session and drops idle connections.
func (g *Gateway) Close(ctx context.Context) error {
	err := g.pool.Close(ctx)
	g.client.CloseIdleConnections()
	g.stream.CloseIdleConnections()
	return err
}
