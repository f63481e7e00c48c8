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

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"

	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/worker"
)

// shutdownGrace is how long in-flight requests may finish after a signal.
const shutdownGrace = 10 * time.Second

func serve(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	work := fs.Bool("worker", true, "also run the background worker in this process")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	a, err := open(ctx, stderr, getenv, true, true)
	if err != nil {
		return err
	}
	defer a.close(ctx)

	sessionStore := pgxstore.NewWithCleanupInterval(a.store.Pool(), 30*time.Minute)
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
	srv := &http.Server{
		Handler:           a.handler(sessionStore, q),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
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
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// handler is the whole HTTP surface of the instance.
func (a *app) handler(sessions scs.Store, q *worker.Queue) http.Handler {
	return handlers.New(handlers.Deps{
		Config:    a.cfg,
		Store:     a.store,
		Sessions:  handlers.NewSessions(a.cfg, sessions),
		Logger:    a.log,
		Version:   version,
		Refresher: q,
		Search:    a.searcher(),
		Keys:      a.keys,
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
