// Package handlers is toolgate's HTTP layer: console pages and the /api/v1
// JSON API over the same internal calls. routes.go is the route table.
package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/fastconn"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/websession"
)

// Deps is everything the HTTP layer needs, built by cmd/toolgate.
type Deps struct {
	Config   config.Config
	Store    *db.Store
	Sessions *websession.Sessions
	Logger   *slog.Logger
	// Refresher enqueues refreshes and deletions of sources for the worker.
	Refresher sources.Refresher
	// Search finds tools: Meilisearch with the PostgreSQL fallback.
	Search search.Index
	// Keys is the key ring that seals credentials.
	Keys *secrets.Ring
	// Gateway is the call pipeline: /mcp and the console's "Try it" use it.
	Gateway *gateway.Gateway
	// MCP serves /mcp; nil leaves the endpoint out.
	MCP http.Handler
	// MCPConns, when set, takes over the kept-alive connections of
	// requests MCP answers whole (internal/fastconn); the http.Server
	// must also serve its Listener.
	MCPConns *fastconn.Server
	// Approvals holds calls for a person's decision: the Approvals pages,
	// their API and the sidebar's pending badge use it.
	Approvals *approvals.Service
	// Checks are the readiness checks /readyz runs, by name.
	Checks  map[string]func(context.Context) error
	Version string
}

// Server holds the handlers' shared state.
type Server struct {
	cfg       config.Config
	store     *db.Store
	sessions  *websession.Sessions
	log       *slog.Logger
	auth      *auth.Authenticator
	tenancy   *tenancy.Service
	sources   *sources.Service
	creds     *credentials.Service
	search    search.Index
	gateway   *gateway.Gateway
	mcp       http.Handler
	mcpConns  *fastconn.Server
	logMCP    func(r *http.Request, status int, start time.Time)
	approvals *approvals.Service
	// shutdowns ends long-lived responses when their server shuts down.
	shutdowns shutdowns
	checks    map[string]func(context.Context) error
	version   string
}

// New builds the Echo instance with every route and middleware.
func New(d Deps) *echo.Echo {
	authn := &auth.Authenticator{Store: d.Store, Throttle: auth.DefaultThrottle}
	s := &Server{
		cfg:       d.Config,
		store:     d.Store,
		sessions:  d.Sessions,
		log:       d.Logger,
		auth:      authn,
		tenancy:   &tenancy.Service{Store: d.Store, Signup: d.Config.Signup, Auth: authn},
		checks:    d.Checks,
		search:    d.Search,
		gateway:   d.Gateway,
		mcp:       d.MCP,
		mcpConns:  d.MCPConns,
		logMCP:    MCPRequestLog(d.Config, d.Logger),
		approvals: d.Approvals,
		version:   d.Version,
	}
	rules := sources.Rules{AllowStdio: d.Config.AllowStdio}
	discoverer := registry.NewDiscoverer(d.Config.AllowPrivateNetworks, d.Config.OutboundTimeout, d.Version)
	s.sources = &sources.Service{Store: d.Store, Rules: rules, Refresher: d.Refresher, Discoverer: discoverer}
	s.creds = &credentials.Service{Store: d.Store, Ring: d.Keys, Refresher: d.Refresher, Sources: s.sources}
	s.sources.Credentials = s.creds
	// A session store failure (PostgreSQL gone) is logged and answered
	// plainly: the page frame itself needs the session.
	s.sessions.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		s.log.Error("session store failed", "error", err, "request_id", w.Header().Get(echo.HeaderXRequestID))
		http.Error(w, "toolgate cannot reach its database; try again shortly", http.StatusServiceUnavailable)
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = ipExtractor(d.Config)
	s.routes(e)
	return e
}

// ipExtractor reads a request's client address: from X-Forwarded-For
// behind a trusted proxy, else the connection's.
func ipExtractor(cfg config.Config) echo.IPExtractor {
	if cfg.TrustProxyHeaders {
		return echo.ExtractIPFromXFFHeader()
	}
	return echo.ExtractIPDirect()
}

// NewSessions configures the console's session manager over PostgreSQL.
func NewSessions(cfg config.Config, store *websession.Store) *websession.Sessions {
	sm := websession.New(store, cfg.SessionLifetime, cfg.SessionIdleTimeout)
	sm.Cookie.Name = "toolgate_session"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = cfg.SecureCookies()
	sm.Cookie.Persist = true
	return sm
}
