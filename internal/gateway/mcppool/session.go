package mcppool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/stdioserver"
)

// protocolVersion is asked for in initialize, as discovery does: every MCP
// server in use answers it, and the server may negotiate an older one.
const protocolVersion = "2025-11-25"

// closeGrace bounds closing a session whose peer does not let go.
const closeGrace = 5 * time.Second

// errPoolClosed is returned by calls made after [Pool.Close].
var errPoolClosed = errors.New("the MCP connection pool is closed")

// configError is a configuration no retry can fix.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// session is one client session, connecting or open.
type session struct {
	key   Key
	stdio bool
	ready chan struct{} // closed once connecting has ended, well or not

	// Set before ready closes.
	cs         *mcp.ClientSession
	lean       *httpCaller // tools/call without the SDK; nil for the SDK's path
	proc       *stdioserver.Process
	err        error
	cancelConn context.CancelCauseFunc

	// Guarded by Pool.mu.
	inflight int
	lastUsed time.Time
	retired  bool // no new calls; closed once inflight reaches 0
	closing  bool // the closer has started
	done     chan struct{}
}

func (s *session) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// acquire returns the open session of r.Key with a call counted on it,
// connecting one (single-flighted) when there is none.
func (p *Pool) acquire(ctx context.Context, r Request, timeout time.Duration) (*session, error) {
	var slotTimer <-chan time.Time
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errPoolClosed
		}
		s := p.sessions[r.Key]
		if s == nil {
			stdio := r.Config.Transport == sources.TransportStdio
			if stdio && p.stdio >= p.opts.MaxStdio && !p.evictIdleStdioLocked() {
				changed := p.changed
				p.mu.Unlock()
				if slotTimer == nil {
					t := time.NewTimer(timeout)
					defer t.Stop()
					slotTimer = t.C
				}
				select {
				case <-changed:
					continue
				case <-slotTimer:
					return nil, &TimeoutError{What: fmt.Sprintf("a free stdio slot: all %d stdio processes stayed busy", p.opts.MaxStdio), Limit: timeout}
				case <-ctx.Done():
					return nil, fmt.Errorf("the call was cancelled while waiting for a free stdio slot: %w", context.Cause(ctx))
				}
			}
			if stdio && p.stdio >= p.opts.MaxStdio {
				// An idle process is being stopped for us; wait for its slot.
				changed := p.changed
				p.mu.Unlock()
				select {
				case <-changed:
					continue
				case <-ctx.Done():
					return nil, fmt.Errorf("the call was cancelled while waiting for a free stdio slot: %w", context.Cause(ctx))
				}
			}
			p.retireReplacedLocked(r.Key)
			s = &session{key: r.Key, stdio: stdio, ready: make(chan struct{}), done: make(chan struct{})}
			if stdio {
				p.stdio++
			}
			p.sessions[r.Key] = s
			p.wg.Add(1)
			go p.connect(s, r, timeout)
		}
		p.mu.Unlock()

		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("the call was cancelled while connecting: %w", context.Cause(ctx))
		}
		p.mu.Lock()
		switch {
		case s.err != nil:
			p.mu.Unlock()
			return nil, s.err
		case s.retired:
			// It died or was replaced between connecting and now.
			p.mu.Unlock()
			continue
		}
		s.inflight++
		s.lastUsed = time.Now()
		p.mu.Unlock()
		return s, nil
	}
}

// release ends a call on s; a transport failure retires s at once.
func (p *Pool) release(s *session, broken bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.inflight--
	s.lastUsed = time.Now()
	if broken {
		if p.sessions[s.key] == s {
			delete(p.sessions, s.key)
		}
		p.closeLocked(s)
		return
	}
	if s.retired && s.inflight == 0 {
		p.closeLocked(s)
	}
	if s.stdio && s.inflight == 0 {
		p.broadcastLocked() // an idle stdio process can make room
	}
}

// retireLocked stops new calls on s and closes it once its calls are done
// (at once when the pool is closing).
func (p *Pool) retireLocked(s *session) {
	s.retired = true
	if !s.isReady() {
		return // connect closes it when it finishes
	}
	if s.inflight == 0 || p.closed {
		p.closeLocked(s)
	}
}

// retireReplacedLocked retires the sessions key supersedes: the source's
// sessions of another configuration, and those of an earlier fingerprint of
// the same credential.
func (p *Pool) retireReplacedLocked(key Key) {
	for k, s := range p.sessions {
		if k.SourceID != key.SourceID || k == key {
			continue
		}
		if k.Config != key.Config || k.CredentialID == key.CredentialID && k.Credential != key.Credential {
			delete(p.sessions, k)
			p.retireLocked(s)
		}
	}
}

// evictIdleStdioLocked retires the least recently used stdio session with
// no call in flight, reporting whether there was one.
func (p *Pool) evictIdleStdioLocked() bool {
	var victim *session
	for _, s := range p.sessions {
		if s.stdio && s.isReady() && s.err == nil && s.inflight == 0 && (victim == nil || s.lastUsed.Before(victim.lastUsed)) {
			victim = s
		}
	}
	if victim == nil {
		return false
	}
	delete(p.sessions, victim.key)
	p.retireLocked(victim)
	return true
}

// broadcastLocked wakes everyone waiting for a stdio slot.
func (p *Pool) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// closeLocked starts closing s: the process stops, the session closes, and
// the stdio slot frees.
func (p *Pool) closeLocked(s *session) {
	s.retired = true
	if s.closing {
		return
	}
	s.closing = true
	close(s.done)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		s.shutdown()
		p.mu.Lock()
		if s.stdio {
			p.stdio--
		}
		p.broadcastLocked()
		p.mu.Unlock()
	}()
}

// shutdown stops s's process and closes its session.
func (s *session) shutdown() {
	if s.proc != nil {
		s.proc.Stop()
	}
	if s.cs != nil {
		done := make(chan struct{})
		go func() {
			_ = s.cs.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(closeGrace):
		}
	}
	if s.cancelConn != nil {
		s.cancelConn(errPoolClosed)
	}
}

// connect starts or reaches the server and initializes, then publishes
// the outcome on s.
func (p *Pool) connect(s *session, r Request, timeout time.Duration) {
	defer p.wg.Done()
	err := s.dial(p, r, timeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	s.err = err
	s.lastUsed = time.Now()
	close(s.ready)
	if err != nil {
		if p.sessions[s.key] == s {
			delete(p.sessions, s.key)
		}
		p.closeLocked(s)
		return
	}
	if s.retired || p.closed {
		p.closeLocked(s)
		return
	}
	// A session whose process exits or whose connection ends is dropped
	// at once, so the next call connects anew.
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if s.proc != nil {
			select {
			case <-s.proc.Exited():
			case <-s.done:
				return
			}
		} else {
			ended := make(chan struct{})
			go func() {
				_ = s.cs.Wait()
				close(ended)
			}()
			select {
			case <-ended:
			case <-s.done:
				<-ended // Close ends Wait
				return
			}
		}
		p.mu.Lock()
		if p.sessions[s.key] == s {
			delete(p.sessions, s.key)
		}
		p.closeLocked(s)
		p.mu.Unlock()
	}()
}

// dial connects s to the server r describes within timeout.
func (s *session) dial(p *Pool, r Request, timeout time.Duration) error {
	cfg := r.Config
	var (
		t      mcp.Transport
		client *http.Client // for streamable-http and sse
	)
	switch cfg.Transport {
	case sources.TransportStdio:
		proc, err := startProcess(cfg, r.Auth)
		if err != nil {
			return err
		}
		s.proc = proc
		t = &mcp.IOTransport{Reader: io.NopCloser(proc.Stdout()), Writer: nopWriteCloser{proc.Stdin()}}
	case sources.TransportStreamableHTTP, sources.TransportSSE:
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &configError{fmt.Sprintf("the MCP URL %q is not an absolute http:// or https:// URL", redactURL(cfg.URL))}
		}
		var headers, query map[string]string
		if r.Auth != nil {
			headers, query = r.Auth.Headers, r.Auth.Query
		}
		client = netguard.Authorize(p.opts.HTTPClient(), cfg.URL, sources.Overlay(cfg.Headers, headers), query)
		if cfg.Transport == sources.TransportSSE {
			t = &mcp.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: client}
		} else {
			// Progress and results of a call come on its own response
			// stream; the pool needs no server-initiated messages, and
			// reconnecting is its own job.
			t = &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client, DisableStandaloneSSE: true, MaxRetries: -1}
		}
	default:
		return &configError{fmt.Sprintf("unknown MCP transport %q: choose stdio, streamable-http or sse", cfg.Transport)}
	}

	// The limit cancels the context rather than setting a deadline on it:
	// transports keep the context Connect was given for the session's life.
	errConnect := &TimeoutError{What: "initialize", Limit: timeout}
	ctx, cancel := context.WithCancelCause(p.ctx)
	timer := time.AfterFunc(timeout, func() { cancel(errConnect) })
	cs, err := p.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if !timer.Stop() && err == nil {
		_ = cs.Close()
		err = errConnect
	}
	if err != nil {
		cancel(err)
		if cause := context.Cause(ctx); errors.Is(cause, errConnect) {
			return errConnect
		} else if errors.Is(cause, context.Canceled) && p.ctx.Err() != nil {
			return errPoolClosed
		}
		return s.explainConnect(err)
	}
	s.cs, s.cancelConn = cs, cancel
	if cfg.Transport == sources.TransportStreamableHTTP && !p.sdkCalls {
		s.lean = newHTTPCaller(p, client, cfg.URL, cs)
	}
	return nil
}

// explainConnect says why initialize failed.
func (s *session) explainConnect(err error) error {
	if serverError(err) != nil {
		return fmt.Errorf("the server refused initialize: %w", err)
	}
	if s.proc != nil {
		if why := exitReason(s.proc); why != "" {
			return fmt.Errorf("initialize failed: %s", why)
		}
	}
	return fmt.Errorf("initialize failed: %w", err)
}

// explain says why a call failed on s.
func (s *session) explain(err error) error {
	if serverError(err) != nil {
		return fmt.Errorf("the server answered tools/call with an error: %w", err)
	}
	if s.proc != nil {
		if why := exitReason(s.proc); why != "" {
			return &transportError{fmt.Sprintf("tools/call failed: %s", why)}
		}
	}
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) {
		return &transportError{fmt.Sprintf("tools/call failed: the connection to the server was lost (%v)", err)}
	}
	return fmt.Errorf("tools/call failed: %w", err)
}

// Codes the SDK's JSON-RPC layer gives failures of its own side of the
// connection, not answers of the server.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005 // the transport could not deliver the request
)

// serverError returns the JSON-RPC error the server answered with, or nil
// when err is not one (the SDK's own transport codes included).
func serverError(err error) *jsonrpc.Error {
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		return nil
	}
	switch wire.Code {
	case codeClientClosing, codeServerClosing, codeRejected:
		return nil
	}
	return wire
}

// transportError is a failure of the connection, not of the tool.
type transportError struct{ msg string }

func (e *transportError) Error() string { return e.msg }

// retryable reports whether err is a transport failure a new session may
// cure: not a tool or JSON-RPC error from the server, not a failure after
// the server took the call (it may have run), not a limit that ran out,
// not a cancellation, not a configuration mistake.
func retryable(err error) bool {
	var (
		timeout   *TimeoutError
		conf      *configError
		delivered *deliveredError
	)
	switch {
	case err == nil, serverError(err) != nil, errors.As(err, &timeout), errors.As(err, &conf), errors.As(err, &delivered),
		errors.Is(err, errPoolClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}

// retiresSession reports whether the session a call failed on with err
// should be replaced: after a transport failure, and after an answer that
// shows the session is not what the pool thinks.
func retiresSession(err error) bool {
	var delivered *deliveredError
	return retryable(err) || errors.As(err, &delivered) && delivered.retire
}

// redactURL shows a URL without user info, query or fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the URL"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}
