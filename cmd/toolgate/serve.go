package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/fastconn"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/mcpserver"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/websession"
	"github.com/toolgate/toolgate/internal/worker"
	"github.com/toolgate/toolgate/views/paths"
)

// shutdownGrace is how long in-flight requests may finish after a signal.
const shutdownGrace = 10 * time.Second

func serve(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	work := fs.Bool("worker", true, "also run the background worker in this process")
	tune := tuningFlags(fs)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	a, err := open(ctx, stderr, getenv, true, true)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	untune, err := tune.start(a.cfg, a.log)
	if err != nil {
		return err
	}
	defer untune()

	sessionStore := websession.NewStore(a.store.Pool(), 30*time.Minute)
	defer sessionStore.StopCleanup()
	if a.cfg.Demo {
		if err := seedDemo(ctx, a, stdout); err != nil {
			return err
		}
	}
	q, err := a.queue(*work)
	if err != nil {
		return err
	}
	if *work {
		if err := q.Start(ctx); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
		defer stopQueue(ctx, a, q)
	}
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (TOOLGATE_ADDR): %w", a.cfg.Addr, err)
	}
	recorder := audit.New(a.store, audit.Options{Logger: a.log})
	held := approvals.New(approvals.Options{Store: a.store, Ring: a.keys, Logger: a.log})
	defer held.Close()
	lookups := gateway.NewLookupCache(a.store, gateway.LookupCacheOptions{Logger: a.log})
	defer lookups.Close()
	gw := a.gateway(recorder, held, lookups)
	mcpHandler := a.mcp(gw)
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	// Agents' kept-alive connections are served by a plain loop once a
	// call has been answered on them; the loop gives a connection back to
	// srv for any other request.
	mcpConns := fastconn.New(fastconn.Options{
		Path: "/mcp", Serve: mcpHandler.ServeFast, MaxBody: handlers.MCPMaxBody, Logger: a.log, Log: handlers.MCPRequestLog(a.cfg, a.log),
		IdleTimeout: srv.IdleTimeout, ReadHeaderTimeout: srv.ReadHeaderTimeout, ReadTimeout: srv.ReadTimeout,
	})
	srv.Handler = a.handler(sessionStore, q, gw, mcpHandler, mcpConns, held)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- srv.Serve(mcpConns.Listener()) }()
	seedDemoAgent(ctx, a, q, stdout)
	a.log.Info("serving", "addr", ln.Addr().String(), "url", a.cfg.BaseURL.String(), "version", version)
	fmt.Fprintf(stdout, "toolgate %s is ready at %s\n", version, a.cfg.BaseURL.String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	a.log.Info("shutting down", "grace", shutdownGrace.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	loops := make(chan error, 1)
	go func() { loops <- mcpConns.Shutdown(sctx) }()
	err = srv.Shutdown(sctx)
	if lerr := <-loops; err == nil {
		err = lerr
	}
	// In-flight calls have finished (or the grace ran out): stop the MCP
	// sessions and the upstream pool.
	mcpHandler.Close()
	if cerr := gw.Close(sctx); cerr != nil {
		a.log.Warn("close upstream sessions", "error", cerr)
	}
	// Every call has been recorded: write the last audit rows.
	if cerr := recorder.Close(context.WithoutCancel(ctx)); cerr != nil {
		a.log.Error("flush the call audit", "error", cerr)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// gateway is the call pipeline /mcp and "Try it" share.
func (a *app) gateway(rec gateway.Recorder, held *approvals.Service, lookups *gateway.LookupCache) *gateway.Gateway {
	base := a.cfg.BaseURL.String()
	return gateway.New(gateway.Options{
		Recorder:             rec,
		LookupCache:          lookups,
		Store:                a.store,
		Credentials:          a.credentials(nil),
		Index:                a.searcher(),
		AllowPrivateNetworks: a.cfg.AllowPrivateNetworks,
		MaxResultBytes:       a.cfg.MaxResultBytes,
		Policies:             &policy.Service{Store: a.store},
		Approvals:            held,
		ApprovalWait:         a.cfg.ApprovalWait,
		ApprovalURL: func(org, ws, id string) string {
			return base + paths.Approval(org, ws, id)
		},
		Version: version,
		Logger:  a.log,
	})
}

// mcp is the /mcp endpoint.
func (a *app) mcp(gw *gateway.Gateway) *mcpserver.Handler {
	return mcpserver.New(mcpserver.Options{
		Gateway:        gw,
		Auth:           &auth.Authenticator{Store: a.store, Throttle: auth.DefaultThrottle},
		Store:          a.store,
		BaseURL:        a.cfg.BaseURL,
		AllowedHosts:   a.cfg.MCPAllowedHosts,
		AllowedOrigins: a.cfg.MCPAllowedOrigins,
		Version:        version,
		Logger:         a.log,
	})
}

// handler is the whole HTTP surface of the instance.
func (a *app) handler(sessions *websession.Store, q *worker.Queue, gw *gateway.Gateway, mcp http.Handler, mcpConns *fastconn.Server, held *approvals.Service) http.Handler {
	return handlers.New(handlers.Deps{
		Config:    a.cfg,
		Store:     a.store,
		Sessions:  handlers.NewSessions(a.cfg, sessions),
		Logger:    a.log,
		Version:   version,
		Refresher: q,
		Search:    a.searcher(),
		Keys:      a.keys,
		Gateway:   gw,
		MCP:       mcp,
		MCPConns:  mcpConns,
		Approvals: held,
		Checks: map[string]func(context.Context) error{
			"postgresql":  a.store.Ping,
			"meilisearch": a.meiliCheck,
		},
	})
}

// stopQueue lets running jobs finish within the shutdown grace.
func stopQueue(ctx context.Context, a *app, q *worker.Queue) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := q.Stop(sctx); err != nil {
		a.log.Error("stop worker", "error", err)
	}
}
