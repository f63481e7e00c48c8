// Package mcp discovers the tools of an MCP server: it connects over stdio,
// streamable HTTP or SSE with the official Go SDK, initializes, lists every
// tool and disconnects, turning what it finds into [sources.Tool]s.
//
// A stdio server is a child process that gets only its declared environment
// (plus PATH), runs in its own process group and never outlives [Discover].
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/sources"
)

// Options tune a discovery.
type Options struct {
	// HTTPClient makes the requests of streamable-http and sse servers (the
	// caller passes the outbound-guarded client); nil means http.DefaultClient.
	HTTPClient *http.Client
	// InitTimeout limits connecting and initializing; 0 means 10 s.
	InitTimeout time.Duration
	// Timeout limits the whole discovery; 0 means 60 s.
	Timeout time.Duration
	// ClientName and ClientVersion are sent in initialize; empty means
	// "toolgate" and "dev".
	ClientName, ClientVersion string
}

// Defaults of [Options].
const (
	DefaultInitTimeout = 10 * time.Second
	DefaultTimeout     = 60 * time.Second
)

// protocolVersion is the version asked for in initialize. Discovery uses the
// initialize handshake every MCP server in use today answers, rather than the
// SDK's default of probing with server/discover (2026-07-28) first: a server
// that ignores unknown requests before initialize would otherwise cost the
// whole init limit. The server may negotiate an older version.
const protocolVersion = "2025-11-25"

// maxPages bounds tools/list pagination against a server whose cursors never end.
const maxPages = 1000

var (
	errInitTimeout      = errors.New("initialize timed out")
	errDiscoveryTimeout = errors.New("discovery timed out")
)

func (o Options) withDefaults() Options {
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ClientName == "" {
		o.ClientName = "toolgate"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	return o
}

// Discover connects to the server cfg describes, initializes, lists every
// tool (following nextCursor pages) and disconnects. Errors are one sentence
// a person understands; for stdio servers they end with the tail of the
// server's stderr where it helps. When Discover returns, on every path, no
// process it started is left running.
func Discover(ctx context.Context, cfg *sources.MCPConfig, opts Options) (*sources.Discovery, error) {
	if cfg == nil {
		return nil, errors.New("the source has no MCP configuration")
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout, errDiscoveryTimeout)
	defer cancel()
	switch cfg.Transport {
	case sources.TransportStdio:
		return discoverStdio(ctx, cfg, opts)
	case sources.TransportStreamableHTTP, sources.TransportSSE:
		return discoverRemote(ctx, cfg, opts)
	}
	return nil, fmt.Errorf("unknown MCP transport %q: choose stdio, streamable-http or sse", cfg.Transport)
}

// phase names the step a discovery failed in.
type phase string

const (
	phaseInit phase = "initialize"
	phaseList phase = "tools/list"
)

// explainFunc turns a failure in a phase into a person's sentence; it
// returns nil when it has nothing more specific than [explainErr] to say.
type explainFunc func(ctx context.Context, p phase, err error) error

// session runs initialize and tools/list over t. ctx bounds the whole
// discovery; the connection stays bound to it, while initialize alone is
// limited by opts.InitTimeout.
func session(ctx context.Context, t sdk.Transport, opts Options, specific explainFunc) (*sources.Discovery, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: opts.ClientName, Version: opts.ClientVersion}, &sdk.ClientOptions{
		// Discovery answers no server requests (roots, sampling,
		// elicitation), so it advertises none.
		Capabilities: &sdk.ClientCapabilities{},
	})

	// The init limit cancels the context rather than setting a deadline on
	// it: transports (SSE's hanging GET) keep the context Connect was given
	// for the life of the session.
	initCtx, cancelInit := context.WithCancelCause(ctx)
	defer cancelInit(nil)
	timer := time.AfterFunc(opts.InitTimeout, func() { cancelInit(errInitTimeout) })
	cs, err := client.Connect(initCtx, t, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if !timer.Stop() && err == nil {
		_ = cs.Close()
		err = context.Cause(initCtx)
	}
	if err != nil {
		return nil, explainErr(initCtx, phaseInit, err, opts, specific)
	}
	defer closeSession(cs)

	init := cs.InitializeResult()
	d := &sources.Discovery{Server: serverName(init)}
	if init == nil || init.Capabilities == nil || init.Capabilities.Tools == nil {
		d.Warnings = append(d.Warnings, sources.Warning{Subject: "tools", Message: "The server does not offer tools."})
		d.SpecHash = specHash(nil)
		return d, nil
	}

	var listed []*sdk.Tool
	params := &sdk.ListToolsParams{}
	cursors := map[string]bool{}
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("the server kept paginating tools/list past %d pages", maxPages)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, explainErr(ctx, phaseList, err, opts, specific)
		}
		listed = append(listed, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		if cursors[res.NextCursor] {
			return nil, errors.New("the server sent the same tools/list cursor twice, so its list never ends")
		}
		cursors[res.NextCursor] = true
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
	d.Tools, d.Warnings = toolsFrom(listed)
	d.SpecHash = specHash(d.Tools)
	return d, nil
}

// closeSession closes cs, giving up after a few seconds on a peer that
// does not let go (stdio processes are stopped separately anyway).
func closeSession(cs *sdk.ClientSession) {
	done := make(chan struct{})
	go func() {
		_ = cs.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

func serverName(init *sdk.InitializeResult) string {
	if init == nil || init.ServerInfo == nil {
		return ""
	}
	return strings.TrimSpace(init.ServerInfo.Name + " " + init.ServerInfo.Version)
}

// explainErr says why a phase failed: the transport's specific explanation
// first, then timeouts, cancellation and errors the server reported.
func explainErr(ctx context.Context, p phase, err error, opts Options, specific explainFunc) error {
	if specific != nil {
		if e := specific(ctx, p, err); e != nil {
			return e
		}
	}
	if e := explainContext(ctx, p, opts); e != nil {
		return e
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		code := ""
		if wire.Code != 0 {
			code = fmt.Sprintf(" (code %d)", wire.Code)
		}
		if p == phaseInit {
			return fmt.Errorf("the server refused initialize: %s%s", wire.Message, code)
		}
		return fmt.Errorf("the server answered tools/list with an error: %s%s", wire.Message, code)
	}
	if strings.Contains(err.Error(), "unsupported protocol version") {
		return fmt.Errorf("the server answered initialize with an MCP version toolgate does not support: %v", err)
	}
	if p == phaseInit {
		return fmt.Errorf("initialize failed: %w", err)
	}
	return fmt.Errorf("tools/list failed: %w", err)
}

// explainContext reports the limits and cancellations that ended ctx, or nil.
func explainContext(ctx context.Context, p phase, opts Options) error {
	cause := context.Cause(ctx)
	switch {
	case cause == nil:
		return nil
	case errors.Is(cause, errInitTimeout):
		return fmt.Errorf("the server did not answer initialize within %s", opts.InitTimeout)
	case errors.Is(cause, errDiscoveryTimeout) && p == phaseInit:
		return fmt.Errorf("the server did not answer initialize within the discovery limit of %s", opts.Timeout)
	case errors.Is(cause, errDiscoveryTimeout):
		return fmt.Errorf("the server did not finish listing its tools within %s", opts.Timeout)
	case errors.Is(cause, errServerExited):
		return nil // the transport explains it
	}
	return fmt.Errorf("discovery was cancelled: %w", cause)
}

// toolsFrom maps the server's tools, skipping nameless and repeated ones
// with a warning.
func toolsFrom(listed []*sdk.Tool) ([]sources.Tool, []sources.Warning) {
	var (
		tools    []sources.Tool
		warnings []sources.Warning
		seen     = map[string]bool{}
	)
	for _, t := range listed {
		if t == nil || strings.TrimSpace(t.Name) == "" {
			warnings = append(warnings, sources.Warning{Subject: "tools/list", Message: "Skipped a tool without a name."})
			continue
		}
		if seen[t.Name] {
			warnings = append(warnings, sources.Warning{Subject: t.Name, Message: "The server listed this tool more than once; kept the first."})
			continue
		}
		seen[t.Name] = true
		tool, warns := toolFrom(t)
		tools = append(tools, tool)
		warnings = append(warnings, warns...)
	}
	sort.SliceStable(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, warnings
}

// objectSchema is the input schema of a tool that declares none.
var objectSchema = json.RawMessage(`{"type":"object"}`)

func toolFrom(t *sdk.Tool) (sources.Tool, []sources.Warning) {
	var warnings []sources.Warning
	tool := sources.Tool{
		Name:            t.Name,
		Title:           t.Title,
		Description:     t.Description,
		InputSchema:     objectSchema,
		DefaultApproval: sources.ApprovalRequired,
	}
	if t.InputSchema != nil {
		if b, ok := schemaJSON(t.InputSchema); ok {
			tool.InputSchema = b
		} else {
			warnings = append(warnings, sources.Warning{Subject: t.Name, Message: "The input schema is not a JSON object; using an empty object schema."})
		}
	}
	if t.OutputSchema != nil {
		if b, ok := schemaJSON(t.OutputSchema); ok {
			tool.OutputSchema = b
		} else {
			warnings = append(warnings, sources.Warning{Subject: t.Name, Message: "The output schema is not a JSON object; ignored it."})
		}
	}
	if a := t.Annotations; a != nil {
		// The SDK decodes readOnlyHint and idempotentHint as plain bools,
		// so an absent hint reads as false, which is also MCP's default.
		tool.Annotations = sources.Annotations{
			Title:           a.Title,
			ReadOnlyHint:    boolPtr(a.ReadOnlyHint),
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  boolPtr(a.IdempotentHint),
			OpenWorldHint:   a.OpenWorldHint,
		}
		if tool.Title == "" {
			tool.Title = a.Title
		}
		// MCP's defaults make an unannotated tool potentially destructive.
		if a.ReadOnlyHint {
			tool.DefaultApproval = sources.ApprovalAuto
		}
	}
	tool.Ref, _ = json.Marshal(struct {
		Tool string `json:"tool"`
	}{t.Name})
	return tool, warnings
}

// schemaJSON marshals a schema as the SDK decoded it (maps, so keys come out
// sorted and the bytes are canonical), accepting only JSON objects.
func schemaJSON(schema any) (json.RawMessage, bool) {
	b, err := json.Marshal(schema)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	return b, true
}

func boolPtr(b bool) *bool { return &b }

// specHash hashes the canonical JSON of the tools sorted by name, so an
// unchanged server hashes the same on every discovery.
func specHash(tools []sources.Tool) string {
	sorted := append([]sources.Tool(nil), tools...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	if sorted == nil {
		sorted = []sources.Tool{}
	}
	b, _ := json.Marshal(sorted)
	return sources.Hash(b)
}
