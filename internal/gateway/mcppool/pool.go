// Package mcppool keeps client sessions to upstream MCP servers and calls
// their tools. Sessions are pooled per source, credential and configuration
// ([Key]) and shared by concurrent calls; a session that fails at the
// transport level is replaced once per call; idle sessions, and so idle
// stdio processes, are stopped; stdio processes are capped.
//
// Results come back as the SDK's [mcp.CallToolResult], content untouched, so
// text, image, audio and embedded resources pass through as the server sent
// them. Upstream progress on a call is relayed to the caller's callback.
//
// The SDK connects, initializes and closes every session and carries the
// calls of stdio and legacy SSE servers; on a streamable-HTTP session the
// pool sends tools/call itself, which costs a fraction of the SDK's CPU
// (see httpcall.go).
package mcppool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/h1"
	"github.com/toolgate/toolgate/internal/sources"
)

// Defaults of [Options].
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultCallTimeout    = 30 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultMaxStdio       = 32
)

// Options tune a [Pool].
type Options struct {
	// ConnectTimeout limits starting or reaching a server and initializing;
	// 0 means [DefaultConnectTimeout].
	ConnectTimeout time.Duration
	// CallTimeout limits one tools/call; 0 means [DefaultCallTimeout].
	CallTimeout time.Duration
	// IdleTimeout closes a session (and stops its process) that has had no
	// call for this long; 0 means [DefaultIdleTimeout].
	IdleTimeout time.Duration
	// MaxStdio caps the stdio processes running at once; 0 means
	// [DefaultMaxStdio].
	MaxStdio int
	// HTTPClient returns the client for streamable-http and sse servers
	// (the netguard client); nil means http.DefaultClient.
	HTTPClient func() *http.Client
	// ClientName and ClientVersion are sent in initialize; empty means
	// "toolgate" and "dev".
	ClientName, ClientVersion string
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxStdio <= 0 {
		o.MaxStdio = DefaultMaxStdio
	}
	if o.HTTPClient == nil {
		// As the gateway's: the h1 transport over net/http's.
		client := &http.Client{Transport: h1.New(http.DefaultTransport.(*http.Transport).Clone())}
		o.HTTPClient = func() *http.Client { return client }
	}
	if o.ClientName == "" {
		o.ClientName = "toolgate"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	return o
}

// Key names a pooled session: the source, the credential it carries and the
// configuration it was started from. Build it with [NewKey]; it holds
// fingerprints, never a secret.
type Key struct {
	SourceID string
	// CredentialID names the stored credential (empty for none); a new
	// fingerprint under the same id is a rotation and retires the old
	// session.
	CredentialID string
	// Credential is a hash of the credential's header, query and env values.
	Credential string
	// Config is a hash of the configuration and its version; a new one
	// retires every session of the source.
	Config string
}

// NewKey builds the key of a source's session for cfg at configVersion with
// auth (nil for none) from the credential credentialID.
func NewKey(sourceID, credentialID string, configVersion int64, cfg *sources.MCPConfig, auth *sources.Auth) Key {
	b, _ := json.Marshal(cfg)
	h := sha256.New()
	h.Write([]byte(strconv.FormatInt(configVersion, 10)))
	h.Write([]byte{0})
	h.Write(b)
	return Key{
		SourceID:     sourceID,
		CredentialID: credentialID,
		Credential:   Fingerprint(auth),
		Config:       hex.EncodeToString(h.Sum(nil))[:32],
	}
}

// Fingerprint hashes what auth adds to a session (headers, query
// parameters, environment); "" for none.
func Fingerprint(auth *sources.Auth) string {
	if auth.Empty() {
		return ""
	}
	h := sha256.New()
	for _, part := range []struct {
		kind string
		m    map[string]string
	}{{"h", auth.Headers}, {"q", auth.Query}, {"e", auth.Env}} {
		names := make([]string, 0, len(part.m))
		for k := range part.m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			// Length-prefixed so no two sets hash alike by concatenation.
			fmt.Fprintf(h, "%s%d:%s%d:%s", part.kind, len(k), k, len(part.m[k]), part.m[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Request is one tool call. Call builds one with the pool's timeouts;
// [Pool.Do] takes one directly, so a source can set its own.
type Request struct {
	Key    Key
	Config *sources.MCPConfig
	Auth   *sources.Auth
	Tool   string
	Args   map[string]any
	// Progress receives the upstream's notifications/progress for this call.
	Progress func(progress, total float64, message string)
	// ConnectTimeout and CallTimeout override the pool's when positive.
	ConnectTimeout, CallTimeout time.Duration
}

// Pool holds the sessions. It is safe for concurrent use.
type Pool struct {
	opts   Options
	client *mcp.Client
	// ctx bounds every connection; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[Key]*session
	stdio    int           // stdio sessions connecting or open
	changed  chan struct{} // closed and replaced when a slot may have freed
	closed   bool
	// leanCalls holds the cancel of each streamable-HTTP call in flight
	// on the lean path, which Close ends; a nil is a free slot, listed in
	// freeSlots.
	leanCalls []context.CancelFunc
	freeSlots []int

	progress  sync.Map // token string -> func(progress, total float64, message string)
	nextToken atomic.Uint64

	// wg counts the janitor, process reapers, session closers and what
	// [Pool.spawn] starts.
	wg      sync.WaitGroup
	janitor chan struct{}

	// drainGrace is the lean path's; tests lengthen it.
	drainGrace time.Duration

	// sdkCalls sends every tools/call through the SDK, for tests and
	// benchmarks that compare the two paths.
	sdkCalls bool
}

// New returns a pool; stop it with [Pool.Close].
func New(opts Options) *Pool {
	opts = opts.withDefaults()
	p := &Pool{
		opts:       opts,
		sessions:   map[Key]*session{},
		changed:    make(chan struct{}),
		janitor:    make(chan struct{}),
		drainGrace: drainGrace,
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.client = mcp.NewClient(&mcp.Implementation{Name: opts.ClientName, Version: opts.ClientVersion}, &mcp.ClientOptions{
		// The gateway answers no server requests (roots, sampling,
		// elicitation), so it advertises none.
		Capabilities:                &mcp.ClientCapabilities{},
		ProgressNotificationHandler: p.relayProgress,
	})
	p.wg.Add(1)
	go p.sweep()
	return p
}

// Call calls tool with args on the source's server, through the session of
// key (connecting it when needed), with the pool's timeouts.
func (p *Pool) Call(ctx context.Context, key Key, cfg *sources.MCPConfig, auth *sources.Auth, tool string, args map[string]any, progress func(progress, total float64, message string)) (*mcp.CallToolResult, error) {
	return p.Do(ctx, Request{Key: key, Config: cfg, Auth: auth, Tool: tool, Args: args, Progress: progress})
}

// Do runs r. A transport failure (the connection closed, the process
// exited, the server unreachable) drops the session and the call is tried
// once more on a new one; a tool error or a JSON-RPC error from the server
// is returned as is, and so is a failure after the server accepted the
// call, which may have run it. Errors name the source and are scrubbed of r.Auth's
// secrets.
func (p *Pool) Do(ctx context.Context, r Request) (*mcp.CallToolResult, error) {
	res, err := p.do(ctx, r)
	if err != nil {
		return nil, &redactedError{msg: r.Auth.Redact(err.Error()), err: err}
	}
	return res, nil
}

// redactedError shows an error's message scrubbed of secrets while
// errors.As still finds what it wraps (a [*TimeoutError]).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (p *Pool) do(ctx context.Context, r Request) (*mcp.CallToolResult, error) {
	if r.Config == nil {
		return nil, fmt.Errorf("source %s has no MCP configuration", r.Key.SourceID)
	}
	connectTimeout, callTimeout := p.opts.ConnectTimeout, p.opts.CallTimeout
	if r.ConnectTimeout > 0 {
		connectTimeout = r.ConnectTimeout
	}
	if r.CallTimeout > 0 {
		callTimeout = r.CallTimeout
	}
	var first error
	for attempt := 0; attempt < 2; attempt++ {
		res, err := p.callOnce(ctx, r, connectTimeout, callTimeout)
		if err == nil {
			return res, nil
		}
		if !retryable(err) || ctx.Err() != nil {
			if first != nil {
				return nil, fmt.Errorf("source %s: %v, and after reconnecting: %w", r.Key.SourceID, first, err)
			}
			return nil, fmt.Errorf("source %s: %w", r.Key.SourceID, err)
		}
		if first == nil {
			first = err
			p.dropIdleConnections(r.Config)
			continue
		}
		return nil, fmt.Errorf("source %s: %v; reconnected once and it failed again: %w", r.Key.SourceID, first, err)
	}
	panic("unreachable")
}

// callOnce makes the call on the session of r, connecting it if need be.
// The session is released however the call ends; a panic in it (a bug)
// retires the session, whose state is then unknown, and goes on.
func (p *Pool) callOnce(ctx context.Context, r Request, connectTimeout, callTimeout time.Duration) (res *mcp.CallToolResult, err error) {
	s, err := p.acquire(ctx, r, connectTimeout)
	if err != nil {
		return nil, err
	}
	broken := true
	defer func() { p.release(s, broken) }()
	res, err = p.callOn(ctx, s, r, callTimeout)
	broken = err != nil && retiresSession(err)
	return res, err
}

// dropIdleConnections closes the idle connections to an HTTP source's
// server before the pool reconnects to it. The failure that led here is
// usually the server going away (a restart, a deploy), which closes every
// connection to it; a kept-alive one whose close has not reached this
// side yet looks open, and the reconnect's initialize, sent on it, would
// fail too. The h1 transport closes that origin's connections alone; any
// other transport closes all its idle connections, which costs other
// sources a new connection each and nothing else.
func (p *Pool) dropIdleConnections(cfg *sources.MCPConfig) {
	if cfg.Transport == sources.TransportStdio {
		return
	}
	client := p.opts.HTTPClient()
	if t, ok := client.Transport.(*h1.Transport); ok {
		if u, err := url.Parse(cfg.URL); err == nil {
			t.CloseIdleConnectionsTo(u)
		}
		return
	}
	client.CloseIdleConnections()
}

// callOn runs the call on s with the call timeout and the progress relay.
func (p *Pool) callOn(ctx context.Context, s *session, r Request, timeout time.Duration) (*mcp.CallToolResult, error) {
	var token string
	if r.Progress != nil {
		token = "tg-" + strconv.FormatUint(p.nextToken.Add(1), 10)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		res *mcp.CallToolResult
		err error
	)
	if s.lean != nil {
		// Closing the pool ends the calls in flight; nothing else does: a
		// session retired because another of its calls failed leaves its
		// other calls, independent POSTs the server may be running, to
		// finish rather than be cut and sent again.
		slot, ok := p.trackLean(cancel)
		if !ok {
			return nil, fmt.Errorf("tools/call was not sent: %w", errPoolClosed)
		}
		defer p.untrackLean(slot)
		res, err = s.lean.call(cctx, r.Tool, r.Args, token, r.Progress)
	} else {
		res, err = p.callSDK(cctx, s, r, token)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the call was cancelled: %w", context.Cause(ctx))
		}
		if p.ctx.Err() != nil && errors.Is(cctx.Err(), context.Canceled) {
			return nil, fmt.Errorf("tools/call was cut short: %w", errPoolClosed)
		}
		if cctx.Err() != nil {
			return nil, &TimeoutError{What: fmt.Sprintf("tools/call %q", r.Tool), Limit: timeout, Call: true}
		}
		return nil, s.explain(err)
	}
	return res, nil
}

// trackLean keeps cancel, a lean call's, for Close to call; false when
// the pool has closed. A slot of the pool's own list instead of an
// AfterFunc on the pool's context, which costs every call an allocation
// and a trip through that context's lock and map.
func (p *Pool) trackLean(cancel context.CancelFunc) (slot int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, false
	}
	if n := len(p.freeSlots); n > 0 {
		slot, p.freeSlots = p.freeSlots[n-1], p.freeSlots[:n-1]
		p.leanCalls[slot] = cancel
		return slot, true
	}
	p.leanCalls = append(p.leanCalls, cancel)
	return len(p.leanCalls) - 1, true
}

func (p *Pool) untrackLean(slot int) {
	p.mu.Lock()
	p.leanCalls[slot] = nil
	p.freeSlots = append(p.freeSlots, slot)
	p.mu.Unlock()
}

// callSDK runs the call through the SDK's client session; token, when
// set, routes the call's progress through [Pool.relayProgress].
func (p *Pool) callSDK(ctx context.Context, s *session, r Request, token string) (*mcp.CallToolResult, error) {
	args := r.Args
	if args == nil {
		args = map[string]any{} // a nil map would go out as null
	}
	params := &mcp.CallToolParams{Name: r.Tool, Arguments: args}
	if token != "" {
		p.progress.Store(token, r.Progress)
		defer p.progress.Delete(token)
		params.SetProgressToken(token)
	}
	return s.cs.CallTool(ctx, params)
}

// relayProgress hands a progress notification to the call that owns its token.
func (p *Pool) relayProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	if f, ok := p.progress.Load(fmt.Sprint(req.Params.ProgressToken)); ok {
		f.(func(float64, float64, string))(req.Params.Progress, req.Params.Total, req.Params.Message)
	}
}

// spawn runs f on a goroutine [Pool.Close] waits for, unless the pool is
// closed, and reports whether it did.
func (p *Pool) spawn(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
	return true
}

// Stats counts what the pool holds.
type Stats struct {
	Sessions int   // open sessions
	Stdio    int   // stdio processes running
	PIDs     []int // their process ids
}

// Stats reports the open sessions and running stdio processes.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var st Stats
	for _, s := range p.sessions {
		if !s.isReady() || s.err != nil {
			continue
		}
		st.Sessions++
		if s.proc != nil {
			st.Stdio++
			st.PIDs = append(st.PIDs, s.proc.Pid())
		}
	}
	sort.Ints(st.PIDs)
	return st
}

// Close closes every session and stops every process the pool started,
// waiting for them until ctx ends. Calls made after Close fail, and so do
// the streamable-HTTP calls in flight.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.janitor)
		for k, s := range p.sessions {
			delete(p.sessions, k)
			p.retireLocked(s)
		}
		p.broadcastLocked()
	}
	p.mu.Unlock()
	// The pool's context first: a call that finds its own ended reads the
	// pool's to tell a close from its timeout.
	p.cancel()
	p.mu.Lock()
	for _, cancel := range p.leanCalls {
		if cancel != nil {
			cancel()
		}
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close the MCP pool: %w", ctx.Err())
	}
}

// sweep closes idle sessions until the pool closes.
func (p *Pool) sweep() {
	defer p.wg.Done()
	every := p.opts.IdleTimeout / 4
	every = max(min(every, 30*time.Second), 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.janitor:
			return
		case now := <-t.C:
			p.mu.Lock()
			for k, s := range p.sessions {
				if s.isReady() && s.inflight == 0 && now.Sub(s.lastUsed) >= p.opts.IdleTimeout {
					delete(p.sessions, k)
					p.retireLocked(s)
				}
			}
			p.mu.Unlock()
		}
	}
}

// TimeoutError is a limit that ran out: the connect timeout (starting,
// reaching and initializing the server, or waiting for a stdio slot) or,
// with Call set, the call timeout. [Pool.Do]'s errors unwrap to it.
type TimeoutError struct {
	What  string
	Limit time.Duration
	Call  bool
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the server did not answer %s within %s", e.What, e.Limit)
}
