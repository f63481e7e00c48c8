package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/meilisearch/meilisearch-go"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/embedded"
)

// app is an opened instance: configuration, database, search and, on the
// embedded default, the supervisor of the private services.
type app struct {
	cfg       config.Config
	log       *slog.Logger
	store     *db.Store
	meiliURL  string
	meiliKey  string
	meili     meilisearch.ServiceManager
	supervise *embedded.Supervisor
}

// open loads the configuration, starts the embedded services it asks for,
// connects and migrates.
func open(ctx context.Context, stderr io.Writer, getenv func(string) string, needMeili bool) (*app, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	a := &app{cfg: cfg, log: newLogger(cfg, stderr)}
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
	a.store, err = db.Open(ctx, dbURL)
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	if err := db.Migrate(ctx, a.store.DB()); err != nil {
		a.close(ctx)
		return nil, err
	}
	if needMeili {
		a.meiliURL, a.meiliKey = meiliURL, meiliKey
		a.meili = meilisearch.New(meiliURL, meilisearch.WithAPIKey(meiliKey))
	}
	return a, nil
}

// close releases the database and stops the embedded services.
func (a *app) close(ctx context.Context) {
	if a.store != nil {
		a.store.Close()
	}
	if a.meili != nil {
		a.meili.Close()
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
	if _, err := a.meili.VersionWithContext(ctx); err != nil {
		return fmt.Errorf("meilisearch: %w", err)
	}
	return nil
}
