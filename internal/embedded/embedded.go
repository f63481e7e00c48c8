// Package embedded runs toolgate's private PostgreSQL and Meilisearch, the
// default when no external database or search engine is configured and the
// services of the test harness.
//
// A [Supervisor] locks the data directory, starts the children from the
// machine's own binaries (PostgreSQL on a unix socket only, Meilisearch on a
// loopback port), writes their logs under DataDir/logs, and stops them when
// asked. The children also die with toolgate: they receive a parent-death
// signal and sit in their own process groups, so a terminal's Ctrl-C reaches
// toolgate, which stops them in order.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Options says which services to start and where their files live.
type Options struct {
	// DataDir holds the lock, the cluster, the Meilisearch database, its
	// key and the logs. It is made absolute and created if missing.
	DataDir string
	// PostgresBinDir holds initdb and postgres. Empty: initdb's directory
	// from PATH, else the highest /usr/lib/postgresql/*/bin.
	PostgresBinDir string
	// MeiliBin is the Meilisearch binary. Empty: meilisearch from PATH,
	// else DataDir/bin/meilisearch.
	MeiliBin string
	// Postgres starts PostgreSQL.
	Postgres bool
	// Meili starts Meilisearch.
	Meili bool
	// MeiliPort is the loopback port Meilisearch listens on; 0 picks a free
	// one. A fixed port lets a stopped Meilisearch come back at the same URL
	// (tests of an outage); it is not retried when taken.
	MeiliPort int
	// Fast turns PostgreSQL's durability off (fsync, synchronous_commit,
	// full_page_writes): for tests, whose data may be lost in a crash.
	Fast bool
	// Logger receives the supervisor's own records; nil means slog.Default.
	Logger *slog.Logger
}

// Supervisor owns the running services and the data directory's lock.
type Supervisor struct {
	opts  Options
	log   *slog.Logger
	lock  *dirLock
	spawn *spawner
	pg    *postgres
	meili *meili

	stopOnce sync.Once
	stopErr  error
}

// Start locks opts.DataDir and starts the services opts asks for, failing
// at once with an error wrapping [ErrLocked] when another toolgate holds the
// directory. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Supervisor, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(opts.DataDir, "logs"), 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	lock, err := acquireLock(opts.DataDir)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"postgres.log", "meilisearch.log"} {
		rotateLog(filepath.Join(opts.DataDir, "logs", name))
	}
	s := &Supervisor{opts: opts, log: opts.Logger, lock: lock, spawn: newSpawner()}
	if err := s.startServices(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Stop(stopCtx)
		return nil, err
	}
	return s, nil
}

// normalize fills the defaults and makes DataDir absolute.
func (o Options) normalize() (Options, error) {
	if o.DataDir == "" {
		return o, errors.New("embedded services need a data directory")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, fmt.Errorf("data directory: %w", err)
	}
	o.DataDir = abs
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// startServices starts PostgreSQL and Meilisearch side by side.
func (s *Supervisor) startServices(ctx context.Context) error {
	var wg sync.WaitGroup
	var pgErr, meiliErr error
	if s.opts.Postgres {
		wg.Go(func() { s.pg, pgErr = startPostgres(ctx, s) })
	}
	if s.opts.Meili {
		wg.Go(func() { s.meili, meiliErr = startMeili(ctx, s) })
	}
	wg.Wait()
	if pgErr != nil {
		pgErr = fmt.Errorf("start postgresql: %w", pgErr)
	}
	if meiliErr != nil {
		meiliErr = fmt.Errorf("start meilisearch: %w", meiliErr)
	}
	return errors.Join(pgErr, meiliErr)
}

// DatabaseURL is the URL of the toolgate database over the unix socket,
// for example postgres:///toolgate?host=/x/.data/run&user=toolgate; empty
// when PostgreSQL was not started.
func (s *Supervisor) DatabaseURL() string {
	if s.pg == nil {
		return ""
	}
	return s.pg.url
}

// MeiliURL is Meilisearch's base URL, http://127.0.0.1:<port>; empty when
// it was not started.
func (s *Supervisor) MeiliURL() string {
	if s.meili == nil {
		return ""
	}
	return s.meili.url
}

// MeiliKey is Meilisearch's master key, kept in DataDir/meili.key.
func (s *Supervisor) MeiliKey() string {
	if s.meili == nil {
		return ""
	}
	return s.meili.key
}

// Stop stops Meilisearch and PostgreSQL, waits for them to exit and
// releases the lock. PostgreSQL gets a fast shutdown; whatever has not
// exited when its grace period or ctx ends is killed. Stop may be called
// more than once; later calls return the first call's result.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *Supervisor) stop(ctx context.Context) error {
	running := s.meili != nil || s.pg != nil
	var errs []error
	if s.meili != nil {
		errs = append(errs, s.meili.stop(ctx))
	}
	if s.pg != nil {
		errs = append(errs, s.pg.stop(ctx))
	}
	s.spawn.close()
	errs = append(errs, s.lock.release())
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if running {
		s.log.Info("embedded services stopped", "data_dir", s.opts.DataDir)
	}
	return nil
}

// logPath is the path of a log file under DataDir/logs.
func (s *Supervisor) logPath(name string) string {
	return filepath.Join(s.opts.DataDir, "logs", name)
}

// maxLogSize is the size past which a log is moved aside at start.
const maxLogSize = 16 << 20

// rotateLog keeps a log from growing without end over many runs: past
// maxLogSize it becomes <name>.1, replacing the previous one.
func rotateLog(path string) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
}
