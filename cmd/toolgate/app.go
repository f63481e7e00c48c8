package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/embedded"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/worker"
)

// app is an opened instance: configuration, database, search and, on the
// embedded default, the supervisor of the private services.
type app struct {
	cfg       config.Config
	log       *slog.Logger
	store     *db.Store
	meiliURL  string
	meiliKey  string
	index     *search.Meili
	supervise *embedded.Supervisor
	keys      *secrets.Ring
}

// open loads the configuration, starts the embedded services it asks for,
// connects and migrates.
func open(ctx context.Context, stderr io.Writer, getenv func(string) string, needMeili, needKeys bool) (*app, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	a := &app{cfg: cfg, log: newLogger(cfg, stderr)}
	if needKeys && !cfg.Embedded() && cfg.SecretKeys == "" {
		return nil, a.loadKeys()
	}
	dbURL, meiliURL, meiliKey := cfg.DatabaseURL, cfg.MeiliURL, cfg.MeiliMasterKey
	wantPG, wantMeili := dbURL == "", needMeili && meiliURL == ""
	if wantPG || wantMeili {
		a.log.Info("starting embedded services", "data_dir", cfg.DataDir, "postgres", wantPG, "meilisearch", wantMeili)
		a.supervise, err = embedded.Start(ctx, embedded.Options{
			DataDir: cfg.DataDir, PostgresBinDir: cfg.PostgresBinDir, MeiliBin: cfg.MeiliBin,
			Postgres: wantPG, Meili: wantMeili, Logger: a.log,
		})
		if err != nil {
			return nil, err
		}
		if wantPG {
			dbURL = a.supervise.DatabaseURL()
		}
		if wantMeili {
			meiliURL, meiliKey = a.supervise.MeiliURL(), a.supervise.MeiliKey()
		}
	}
	if needKeys {
		// After the embedded services started: their lock keeps a second
		// server from creating the key file at the same time.
		if err := a.loadKeys(); err != nil {
			a.close(ctx)
			return nil, err
		}
	}
	a.store, err = db.Open(ctx, dbURL)
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	if err := db.Migrate(ctx, a.store.Pool()); err != nil {
		a.close(ctx)
		return nil, err
	}
	if needMeili {
		a.meiliURL, a.meiliKey = meiliURL, meiliKey
		a.index = search.NewMeili(meiliURL, meiliKey, cfg.MeiliIndex)
		if err := a.index.EnsureSettings(ctx); err != nil {
			// Search falls back to PostgreSQL; the reconcile fills the index later.
			a.log.Warn("meilisearch settings not applied; searching PostgreSQL until it answers", "error", err.Error())
		}
	}
	return a, nil
}

// loadKeys reads the credentials' key ring: TOOLGATE_SECRET_KEYS, or on the
// embedded default the key file in the data directory, created once.
func (a *app) loadKeys() error {
	var err error
	switch {
	case a.cfg.SecretKeys != "":
		a.keys, err = secrets.ParseRing(a.cfg.SecretKeys)
	case a.cfg.Embedded():
		a.keys, err = secrets.LoadOrCreateFile(a.keyFile())
	default:
		err = errors.New("config: TOOLGATE_SECRET_KEYS is required with DATABASE_URL, so every replica seals and opens credentials with the same keys; make one with `toolgate keys generate`")
	}
	return err
}

// keyFile is the embedded default's key ring file.
func (a *app) keyFile() string { return filepath.Join(a.cfg.DataDir, secrets.KeyFileName) }

// credentials is the credentials service over the key ring; q refreshes
// sources whose credentials change.
func (a *app) credentials(q sources.Refresher) *credentials.Service {
	return &credentials.Service{Store: a.store, Ring: a.keys, Refresher: q}
}

// refresher is the one function that refreshes sources, for the worker.
func (a *app) refresher() *registry.Refresher {
	return &registry.Refresher{
		Store:       a.store,
		Discoverer:  registry.NewDiscoverer(a.cfg.AllowPrivateNetworks, a.cfg.OutboundTimeout, version),
		Rules:       sources.Rules{AllowStdio: a.cfg.AllowStdio},
		Log:         a.log,
		Index:       a.index,
		Credentials: a.credentials(nil),
	}
}

// searcher is Meilisearch with the PostgreSQL fallback.
func (a *app) searcher() *search.Fallback {
	return &search.Fallback{Primary: a.index, Secondary: &search.Postgres{Store: a.store}, Log: a.log}
}

// queue runs jobs in this process when work is set, else only enqueues.
func (a *app) queue(work bool) (*worker.Queue, error) {
	if !work {
		return worker.NewQueue(a.store)
	}
	return worker.New(a.store, a.refresher(), a.log, worker.Options{
		Concurrency: a.cfg.WorkerConcurrency, JobTimeout: a.cfg.JobTimeout,
		RefreshInterval: a.cfg.RefreshInterval, ReconcileInterval: a.cfg.ReconcileInterval,
	})
}

// close releases the database and stops the embedded services.
func (a *app) close(ctx context.Context) {
	if a.store != nil {
		a.store.Close()
	}
	if a.index != nil {
		a.index.Close()
	}
	if a.supervise != nil {
		if err := a.supervise.Stop(context.WithoutCancel(ctx)); err != nil {
			a.log.Error("stop embedded services", "error", err)
		}
	}
}

// newLogger builds the process logger from the configuration.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(cfg.LogLevel)))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// meiliCheck is the readiness check of Meilisearch: reachable, and the key works.
func (a *app) meiliCheck(ctx context.Context) error {
	if err := a.index.Health(ctx); err != nil {
		return fmt.Errorf("meilisearch: %w", err)
	}
	return nil
}
