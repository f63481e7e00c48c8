package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/fastconn"
)

// sessions are the Streamable HTTP sessions this replica holds in memory,
// each rebuilt from its PostgreSQL row when a request for it lands here
// first.
type sessions struct {
	h    *Handler
	mu   sync.Mutex
	live map[string]*liveSession
}

// liveSession is one session held by this replica.
type liveSession struct {
	row       db.MCPSession
	session   *mcp.ServerSession
	transport *mcp.StreamableServerTransport
	lastUsed  atomic.Int64
	// touched is when the row's last_seen_at was last advanced.
	touched atomic.Int64
	// inflight are the calls the fast path is running.
	inflight inflight
}

// touch advances the row's last_seen_at, at most once a minute.
func (s *sessions) touch(ctx context.Context, ls *liveSession) {
	now := time.Now().UnixNano()
	if now-ls.touched.Load() < int64(time.Minute) {
		return
	}
	ls.touched.Store(now)
	if err := s.h.opts.Store.TouchMCPSession(ctx, ls.row.ID); err != nil {
		s.h.log.Warn("mcp: touch session", "error", err)
	}
}

func newSessions(h *Handler) *sessions {
	return &sessions{h: h, live: map[string]*liveSession{}}
}

// serve handles GET, POST and DELETE of session-based protocol versions.
func (s *sessions) serve(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	switch {
	case r.Method == http.MethodPost && id == "":
		s.open(w, r)
	case r.Method != http.MethodGet && r.Method != http.MethodPost && r.Method != http.MethodDelete:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	case id == "":
		http.Error(w, "Bad Request: "+r.Method+" needs an Mcp-Session-Id header", http.StatusBadRequest)
	default:
		ls, ok := s.lookup(w, r, id, r.Context().Value(callerKey{}).(caller))
		if !ok {
			return
		}
		if r.Method == http.MethodDelete {
			s.end(r.Context(), ls)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		ls.transport.ServeHTTP(w, r)
	}
}

// lookup finds the session a request names for caller c, or answers why
// there is none.
func (s *sessions) lookup(w http.ResponseWriter, r *http.Request, id string, c caller) (*liveSession, bool) {
	ls, err := s.find(r.Context(), id, c)
	if errors.Is(err, db.ErrNotFound) {
		http.Error(w, "Not Found: no such session; initialize a new one", http.StatusNotFound)
		return nil, false
	} else if err != nil {
		s.h.log.Error("mcp: load session", "error", err)
		http.Error(w, "toolgate cannot reach its database; try again shortly", http.StatusServiceUnavailable)
		return nil, false
	}
	ls.lastUsed.Store(time.Now().UnixNano())
	return ls, true
}

// open starts a session for an initialize request; any other request
// without a session is answered statelessly, as the newest protocol would.
func (s *sessions) open(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !isInitialize(body) {
		s.h.stateless.ServeHTTP(w, r)
		return
	}
	c := r.Context().Value(callerKey{}).(caller)
	server := s.h.serverOf(r.Context(), c.mode, c.grant.Org.ID, c.grant.Workspace.ID)
	if server == nil {
		http.Error(w, "toolgate cannot load this workspace's tools right now; try again shortly", http.StatusServiceUnavailable)
		return
	}
	id := newSessionID()
	ls := &liveSession{
		row:       db.MCPSession{ID: id, KeyID: c.grant.Key.ID, OrgID: c.grant.Org.ID, WorkspaceID: c.grant.Workspace.ID, Mode: c.mode},
		transport: &mcp.StreamableServerTransport{SessionID: id},
	}
	ls.lastUsed.Store(time.Now().UnixNano())
	var err error
	ls.session, err = server.Connect(r.Context(), ls.transport, &mcp.ServerSessionOptions{})
	if err != nil {
		s.h.log.Error("mcp: connect session", "error", err)
		http.Error(w, "toolgate could not open the session", http.StatusInternalServerError)
		return
	}
	// The row is written before the answer leaves, so the client's next
	// request finds the session on any replica.
	sw := &saveOnWrite{ResponseWriter: w, save: func() bool {
		if ls.session.InitializeParams() == nil {
			return false
		}
		if err := s.save(r.Context(), ls, ""); err != nil {
			s.h.log.Error("mcp: save session", "error", err)
			return false
		}
		ls.touched.Store(time.Now().UnixNano())
		s.mu.Lock()
		s.live[id] = ls
		s.mu.Unlock()
		return true
	}}
	ls.transport.ServeHTTP(sw, r)
	if !sw.saved {
		ls.session.Close()
	}
}

// readBody reads a POST's body, or answers why it cannot.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if whole, ok := r.Body.(*fastconn.Body); ok {
		return whole.Bytes(), true // read already, within the loop's limit
	}
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		http.Error(w, fmt.Sprintf("Request Entity Too Large: the body exceeds %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
		return nil, false
	case err != nil:
		http.Error(w, "Bad Request: the body could not be read: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

// isInitialize reports whether a POST body is (or holds) an initialize request.
func isInitialize(body []byte) bool {
	var one struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &one) == nil {
		return one.Method == "initialize"
	}
	var batch []struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &batch) == nil {
		return slices.ContainsFunc(batch, func(m struct {
			Method string `json:"method"`
		}) bool {
			return m.Method == "initialize"
		})
	}
	return false
}

// saveOnWrite runs save just before the first byte of the answer.
type saveOnWrite struct {
	http.ResponseWriter
	save  func() bool
	once  bool
	saved bool
}

func (w *saveOnWrite) before() {
	if !w.once {
		w.once = true
		w.saved = w.save()
	}
}

func (w *saveOnWrite) WriteHeader(code int) {
	w.before()
	w.ResponseWriter.WriteHeader(code)
}

func (w *saveOnWrite) Write(b []byte) (int, error) {
	w.before()
	return w.ResponseWriter.Write(b)
}

func (w *saveOnWrite) Flush() {
	w.before()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *saveOnWrite) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// persisted is the part of a session's state the row keeps.
type persisted struct {
	InitializeParams *mcp.InitializeParams `json:"initializeParams"`
	LogLevel         mcp.LoggingLevel      `json:"logLevel,omitempty"`
}

// save writes the session's state; level, when set, is a new log level.
func (s *sessions) save(ctx context.Context, ls *liveSession, level mcp.LoggingLevel) error {
	p := persisted{InitializeParams: ls.session.InitializeParams(), LogLevel: level}
	if level == "" {
		var old persisted
		if len(ls.row.State) > 0 && json.Unmarshal(ls.row.State, &old) == nil {
			p.LogLevel = old.LogLevel
		}
	}
	state, err := json.Marshal(p)
	if err != nil {
		return err
	}
	ls.row.State = state
	return s.h.opts.Store.SaveMCPSession(ctx, ls.row)
}

// find returns the live session, rebuilding it from its row when this
// replica does not hold it. A session belongs to the key that opened it:
// another key gets not found.
func (s *sessions) find(ctx context.Context, id string, c caller) (*liveSession, error) {
	s.mu.Lock()
	ls := s.live[id]
	s.mu.Unlock()
	if ls != nil {
		if ls.row.KeyID != c.grant.Key.ID {
			return nil, db.ErrNotFound
		}
		s.touch(ctx, ls)
		return ls, nil
	}
	row, err := s.h.opts.Store.MCPSessionByID(ctx, id, s.h.opts.SessionIdle)
	if err != nil {
		return nil, err
	}
	if row.KeyID != c.grant.Key.ID {
		return nil, db.ErrNotFound
	}
	var p persisted
	if err := json.Unmarshal(row.State, &p); err != nil || p.InitializeParams == nil {
		return nil, db.ErrNotFound
	}
	server := s.h.serverOf(ctx, row.Mode, row.OrgID, row.WorkspaceID)
	if server == nil {
		return nil, errors.New("no server for the session's workspace")
	}
	ls = &liveSession{row: row, transport: &mcp.StreamableServerTransport{SessionID: id}}
	state := &mcp.ServerSessionState{
		InitializeParams:          p.InitializeParams,
		InitializedParams:         &mcp.InitializedParams{},
		NegotiatedProtocolVersion: negotiated(p.InitializeParams.ProtocolVersion),
		LogLevel:                  p.LogLevel,
	}
	ls.session, err = server.Connect(context.WithoutCancel(ctx), ls.transport, &mcp.ServerSessionOptions{State: state})
	if err != nil {
		return nil, err
	}
	ls.lastUsed.Store(time.Now().UnixNano())
	s.mu.Lock()
	if other := s.live[id]; other != nil {
		// Another request rebuilt it at the same time: keep one.
		s.mu.Unlock()
		ls.session.Close()
		return other, nil
	}
	s.live[id] = ls
	s.mu.Unlock()
	s.touch(ctx, ls)
	return ls, nil
}

// negotiated is the version initialize answered for a requested one.
func negotiated(requested string) string {
	if slices.Contains(ProtocolVersions, requested) && requested < "2026-07-28" {
		return requested
	}
	return "2025-11-25"
}

// setLevel records a session's new log level for every replica.
func (s *sessions) setLevel(ctx context.Context, id string, level mcp.LoggingLevel) {
	s.mu.Lock()
	ls := s.live[id]
	s.mu.Unlock()
	if ls == nil {
		return
	}
	if err := s.save(ctx, ls, level); err != nil {
		s.h.log.Error("mcp: save log level", "error", err)
	}
}

// end closes a session everywhere.
func (s *sessions) end(ctx context.Context, ls *liveSession) {
	s.forget(ls)
	if err := s.h.opts.Store.DeleteMCPSession(ctx, ls.row.ID); err != nil {
		s.h.log.Error("mcp: delete session", "error", err)
	}
}

// forget drops a session from this replica's memory only.
func (s *sessions) forget(ls *liveSession) {
	s.mu.Lock()
	if s.live[ls.row.ID] == ls {
		delete(s.live, ls.row.ID)
	}
	s.mu.Unlock()
	ls.session.Close()
}

// sweep forgets sessions idle here and deletes rows idle everywhere.
func (s *sessions) sweep(ctx context.Context) {
	cutoff := time.Now().Add(-s.h.opts.LocalIdle).UnixNano()
	s.mu.Lock()
	var idle []*liveSession
	for _, ls := range s.live {
		if ls.lastUsed.Load() < cutoff {
			idle = append(idle, ls)
		}
	}
	s.mu.Unlock()
	for _, ls := range idle {
		s.forget(ls)
	}
	if _, err := s.h.opts.Store.DeleteIdleMCPSessions(ctx, s.h.opts.SessionIdle); err != nil {
		s.h.log.Warn("mcp: delete idle sessions", "error", err)
	}
}

// closeAll closes every session this replica holds.
func (s *sessions) closeAll() {
	s.mu.Lock()
	all := make([]*liveSession, 0, len(s.live))
	for _, ls := range s.live {
		all = append(all, ls)
	}
	s.live = map[string]*liveSession{}
	s.mu.Unlock()
	for _, ls := range all {
		ls.session.Close()
	}
}
