// Package mcpserver is toolgate's MCP endpoint, /mcp: Streamable HTTP on
// the official Go SDK, authenticated by workspace API keys, with two tool
// surfaces (search mode's three meta-tools, direct mode's every tool) over
// the gateway's call pipeline.
//
// Sessions of protocol 2025-06-18 and 2025-11-25 keep their state in
// PostgreSQL, so any replica behind a load balancer serves any session.
// Requests of protocol 2026-07-28, which has no sessions, are served
// statelessly.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	tgauth "github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/gateway"
)

// Protocol versions /mcp negotiates, newest first.
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18"}

// Modes: the tool surfaces.
const (
	ModeSearch = "search"
	ModeDirect = "direct"
)

// Defaults.
const (
	// DefaultSessionIdle ends a session unused for this long, on every replica.
	DefaultSessionIdle = 24 * time.Hour
	// DefaultLocalIdle drops an idle session from a replica's memory; the
	// next request rebuilds it from PostgreSQL.
	DefaultLocalIdle = 10 * time.Minute
	// DefaultPollInterval is how often direct-mode tool lists are checked
	// against the registry.
	DefaultPollInterval = 2 * time.Second
)

// Options configure a [Handler].
type Options struct {
	Gateway *gateway.Gateway
	Auth    *tgauth.Authenticator
	Store   *db.Store
	// BaseURL is the instance's public URL: its host and origin are allowed.
	BaseURL *url.URL
	// AllowedHosts and AllowedOrigins extend the allowlists.
	AllowedHosts, AllowedOrigins []string
	Version                      string
	Logger                       *slog.Logger
	// SessionIdle, LocalIdle and PollInterval default to the constants above.
	SessionIdle, LocalIdle, PollInterval time.Duration
	// KeyCacheTTL bounds how long this replica serves an API key's grant
	// from memory (see [tgauth.KeyCache]); zero is
	// [tgauth.DefaultKeyCacheTTL], negative checks every request in the
	// database.
	KeyCacheTTL time.Duration
}

// Handler serves /mcp. Close stops its background work.
type Handler struct {
	opts      Options
	log       *slog.Logger
	hosts     map[string]bool
	anyPort   map[string]bool
	origins   map[string]bool
	search    *mcp.Server
	direct    *directServers
	sessions  *sessions
	stateless *mcp.StreamableHTTPHandler
	keys      *tgauth.KeyCache
	withToken http.Handler
	stop      context.CancelFunc
	done      sync.WaitGroup
}

// New builds the endpoint and starts its background loops.
func New(o Options) *Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.LocalIdle <= 0 {
		o.LocalIdle = DefaultLocalIdle
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	h := &Handler{opts: o, log: o.Logger}
	if o.KeyCacheTTL >= 0 {
		h.keys = tgauth.NewKeyCache(o.Auth, tgauth.KeyCacheOptions{TTL: o.KeyCacheTTL, Logger: o.Logger})
	}
	h.allow(o.BaseURL, o.AllowedHosts, o.AllowedOrigins)
	h.withToken = auth.RequireBearerToken(tokenInfo, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(http.HandlerFunc(h.route))
	h.search = h.newSearchServer()
	h.direct = newDirectServers(h)
	h.sessions = newSessions(h)
	h.stateless = mcp.NewStreamableHTTPHandler(h.serverFor, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		DisableLocalhostProtection: true, // the allowlists below do it, for every address
		Logger:                     o.Logger,
	})
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		h.loop(ctx)
	}()
	return h
}

// Close stops the background loops and closes the sessions this replica
// holds; their state stays in PostgreSQL for the other replicas.
func (h *Handler) Close() {
	h.stop()
	h.done.Wait()
	h.sessions.closeAll()
	if h.keys != nil {
		h.keys.Close()
	}
}

// loop keeps direct-mode tool lists current and forgets idle sessions.
func (h *Handler) loop(ctx context.Context) {
	t := time.NewTicker(h.opts.PollInterval)
	defer t.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.direct.syncAll(ctx)
		if time.Since(lastSweep) > time.Minute {
			lastSweep = time.Now()
			h.sessions.sweep(ctx)
		}
	}
}

// allow builds the Host and Origin allowlists.
func (h *Handler) allow(base *url.URL, hosts, origins []string) {
	h.hosts, h.anyPort, h.origins = map[string]bool{}, map[string]bool{}, map[string]bool{}
	if base != nil {
		h.hosts[strings.ToLower(base.Host)] = true
		h.origins[strings.ToLower(base.Scheme+"://"+base.Host)] = true
		if isLoopbackHost(base.Hostname()) {
			for _, l := range []string{"localhost", "127.0.0.1", "::1"} {
				h.anyPort[l] = true
			}
		}
	}
	for _, v := range hosts {
		h.hosts[strings.ToLower(v)] = true
		if !strings.Contains(strings.TrimPrefix(strings.TrimSuffix(v, "]"), "["), ":") || strings.HasSuffix(v, "]") {
			// A bare host allows any port.
			h.anyPort[strings.Trim(strings.ToLower(v), "[]")] = true
		}
	}
	for _, v := range origins {
		h.origins[strings.TrimSuffix(strings.ToLower(v), "/")] = true
	}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostAllowed checks the Host header against the allowlist.
func (h *Handler) hostAllowed(host string) bool {
	host = strings.ToLower(host)
	if h.hosts[host] {
		return true
	}
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	return h.anyPort[strings.Trim(name, "[]")]
}

// originAllowed checks a browser's Origin header; none is fine. When the
// base URL is on loopback, so is any loopback origin, as for Host.
func (h *Handler) originAllowed(origin string) bool {
	if origin == "" || h.origins[strings.ToLower(origin)] {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && h.anyPort[strings.Trim(strings.ToLower(u.Hostname()), "[]")] && isLoopbackHost(u.Hostname())
}

// caller is what an authenticated request carries to the tools.
type caller struct {
	grant db.APIKeyGrant
	mode  string
}

func (c caller) gatewayCaller() gateway.Caller {
	id := c.grant.Key.ID
	return gateway.Caller{
		OrgID: c.grant.Org.ID, WorkspaceID: c.grant.Workspace.ID,
		UserID: c.grant.User.ID, KeyID: &id, Via: gateway.ViaMCP,
		Role: c.grant.Role, UserEmail: c.grant.User.Email, KeyName: c.grant.Key.Name,
		OrgSlug: c.grant.Org.Slug, WorkspaceSlug: c.grant.Workspace.Slug,
	}
}

type callerKey struct{}

// callerOf finds the caller of a tool request: the SDK hands every request
// the token info the HTTP layer put in its context.
func callerOf(extra *mcp.RequestExtra) (caller, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return caller{}, false
	}
	c, ok := extra.TokenInfo.Extra["caller"].(caller)
	return c, ok
}

// ServeHTTP checks Host and Origin, authenticates the key, picks the mode
// and hands the request to the session layer or the stateless handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, served := h.front(w, r)
	if served {
		return
	}
	h.withToken.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
}

// ServeFast serves r when it is answered whole without the SDK: a refusal
// (host, origin, key), or a request the fast path takes. It reports
// whether it did; when it did not, nothing was written and r is as it
// came, for ServeHTTP. internal/fastconn serves kept-alive connections
// with it.
func (h *Handler) ServeFast(w http.ResponseWriter, r *http.Request) bool {
	_, served := h.front(w, r)
	return served
}

// front checks the host, the origin and the key, and tries the fast path;
// served reports whether r has been answered.
func (h *Handler) front(w http.ResponseWriter, r *http.Request) (c caller, served bool) {
	if !h.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: host %q is not allowed (TOOLGATE_MCP_ALLOWED_HOSTS)", r.Host), http.StatusForbidden)
		return c, true
	}
	if origin := r.Header.Get("Origin"); !h.originAllowed(origin) {
		http.Error(w, fmt.Sprintf("Forbidden: origin %q is not allowed (TOOLGATE_MCP_ALLOWED_ORIGINS)", origin), http.StatusForbidden)
		return c, true
	}
	c, ok := h.authenticate(w, r)
	if !ok {
		return c, true
	}
	return c, h.sessions.fast(w, r, c)
}

// tokenInfo hands the SDK the caller authenticate found: the SDK passes
// token info to every request handler, and the caller rides in it.
func tokenInfo(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	c, ok := ctx.Value(callerKey{}).(caller)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: strconv.FormatInt(c.grant.Key.ID, 10), Extra: map[string]any{"caller": c}}, nil
}

// route sends new-protocol requests to the stateless handler and the rest
// to the sessions.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= "2026-07-28" && r.Header.Get("Mcp-Session-Id") == "" {
		h.stateless.ServeHTTP(w, r)
		return
	}
	h.sessions.serve(w, r)
}

// authenticate answers 401 with a WWW-Authenticate challenge unless the
// request carries a live workspace API key.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (caller, bool) {
	challenge := `Bearer realm="toolgate"`
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, "Unauthorized: send a workspace API key as Authorization: Bearer tgk_... (create one on the workspace's API keys page)", http.StatusUnauthorized)
		return caller{}, false
	}
	g, err := h.apiKey(r.Context(), fields[1])
	if errors.Is(err, tgauth.ErrUnauthenticated) {
		w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token", error_description="the API key is unknown, revoked or expired"`)
		http.Error(w, "Unauthorized: the API key is unknown, revoked or expired", http.StatusUnauthorized)
		return caller{}, false
	} else if err != nil {
		h.log.Error("mcp: authenticate", "error", err)
		http.Error(w, "toolgate cannot check the key right now; try again shortly", http.StatusServiceUnavailable)
		return caller{}, false
	}
	mode := g.Key.Mode
	if r.URL.RawQuery == "" {
		return caller{grant: g, mode: mode}, true
	}
	if m := r.URL.Query().Get("mode"); m != "" {
		if !slices.Contains([]string{ModeSearch, ModeDirect}, m) {
			http.Error(w, fmt.Sprintf("Bad Request: mode must be search or direct (got %q)", m), http.StatusBadRequest)
			return caller{}, false
		}
		mode = m
	}
	return caller{grant: g, mode: mode}, true
}

// apiKey checks a key through the cache when there is one.
func (h *Handler) apiKey(ctx context.Context, bearer string) (db.APIKeyGrant, error) {
	if h.keys != nil {
		return h.keys.APIKey(ctx, bearer)
	}
	return h.opts.Auth.APIKey(ctx, bearer)
}

// serverFor is the MCP server of a request's mode and workspace.
func (h *Handler) serverFor(r *http.Request) *mcp.Server {
	c, ok := r.Context().Value(callerKey{}).(caller)
	if !ok {
		return nil
	}
	return h.serverOf(r.Context(), c.mode, c.grant.Org.ID, c.grant.Workspace.ID)
}

func (h *Handler) serverOf(ctx context.Context, mode string, orgID, workspaceID int64) *mcp.Server {
	if mode == ModeDirect {
		return h.direct.get(ctx, orgID, workspaceID)
	}
	return h.search
}

// serverOptions are the options every server shares.
func (h *Handler) serverOptions(instructions string) *mcp.ServerOptions {
	return &mcp.ServerOptions{
		Instructions:              instructions,
		Logger:                    h.log,
		SupportedProtocolVersions: ProtocolVersions,
		Capabilities: &mcp.ServerCapabilities{
			Tools:   &mcp.ToolCapabilities{ListChanged: true},
			Logging: &mcp.LoggingCapabilities{},
		},
	}
}
