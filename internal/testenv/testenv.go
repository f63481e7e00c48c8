// Package testenv is toolgate's test harness: real PostgreSQL and real
// Meilisearch for every test, and each test in its own database cloned from
// a migrated template.
//
// The services come from TOOLGATE_TEST_DATABASE_URL and
// TOOLGATE_TEST_MEILI_URL (with TOOLGATE_TEST_MEILI_KEY) when set, which is
// how `make test` shares one of each across all packages; otherwise the
// first test that needs one starts a private one with [embedded], and
// [Main] stops it. A missing service fails the test with the command that
// installs it; no test skips.
//
// A package's tests opt in with:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/embedded"
)

// Environment variables that point the harness at running services.
const (
	envDatabaseURL = "TOOLGATE_TEST_DATABASE_URL"
	envMeiliURL    = "TOOLGATE_TEST_MEILI_URL"
	envMeiliKey    = "TOOLGATE_TEST_MEILI_KEY"
	envOutput      = "TOOLGATE_TEST_OUTPUT"
)

// installHint ends every "service missing" failure.
const installHint = "install what the tests need with: make deps"

// Main runs the package's tests, then stops the services this process
// started and removes their files.
func Main(m *testing.M) {
	code := m.Run()
	if err := shutdown(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// stoppers undo, in reverse order, what this process started.
var stoppers struct {
	mu    sync.Mutex
	funcs []func() error
}

// atShutdown registers fn to run when Main ends.
func atShutdown(fn func() error) {
	stoppers.mu.Lock()
	defer stoppers.mu.Unlock()
	stoppers.funcs = append(stoppers.funcs, fn)
}

func shutdown() error {
	stoppers.mu.Lock()
	defer stoppers.mu.Unlock()
	var errs []error
	for i := len(stoppers.funcs) - 1; i >= 0; i-- {
		errs = append(errs, stoppers.funcs[i]())
	}
	stoppers.funcs = nil
	return errors.Join(errs...)
}

// scratch is this process's temporary directory for private services.
// Main removes it; one left by a test binary that crashed is removed by
// the next run.
var scratch = sync.OnceValues(func() (string, error) {
	dir, err := embedded.MkdirTemp("toolgate-test-")
	if err != nil {
		return "", err
	}
	atShutdown(func() error { return os.RemoveAll(dir) })
	return dir, nil
})

// startEmbedded starts private services in a directory of their own under
// the scratch directory (each Supervisor locks its directory).
func startEmbedded(name string, opts embedded.Options) (*embedded.Supervisor, error) {
	dir, err := scratch()
	if err != nil {
		return nil, err
	}
	opts.DataDir = filepath.Join(dir, name)
	opts.Fast = true
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sup, err := embedded.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	atShutdown(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return sup.Stop(ctx)
	})
	return sup, nil
}

// Meili returns the URL and master key of the shared Meilisearch. Tests
// share it, so each should use index names of its own.
func Meili(t testing.TB) (url, key string) {
	t.Helper()
	m, err := meiliService()
	if err != nil {
		t.Fatalf("testenv: meilisearch: %v", err)
	}
	return m.url, m.key
}

type meili struct{ url, key string }

var meiliService = sync.OnceValues(func() (meili, error) {
	if url := os.Getenv(envMeiliURL); url != "" {
		return meili{url: url, key: os.Getenv(envMeiliKey)}, nil
	}
	bin, err := meiliBinary()
	if err != nil {
		return meili{}, err
	}
	sup, err := startEmbedded("meili", embedded.Options{Meili: true, MeiliBin: bin})
	if err != nil {
		return meili{}, err
	}
	return meili{url: sup.MeiliURL(), key: sup.MeiliKey()}, nil
})

// meiliBinary finds Meilisearch: MEILI_BIN, PATH, TOOLGATE_DATA_DIR/bin,
// then .data/bin/meilisearch in the repository, where make deps puts it.
func meiliBinary() (string, error) {
	if bin := os.Getenv("MEILI_BIN"); bin != "" {
		return bin, nil
	}
	if bin, err := exec.LookPath("meilisearch"); err == nil {
		return bin, nil
	}
	var tried []string
	if dir := os.Getenv("TOOLGATE_DATA_DIR"); dir != "" {
		tried = append(tried, filepath.Join(dir, "bin", "meilisearch"))
	}
	if root, err := repoRoot(); err == nil {
		tried = append(tried, filepath.Join(root, ".data", "bin", "meilisearch"))
	}
	for _, bin := range tried {
		if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
			return bin, nil
		}
	}
	return "", fmt.Errorf("meilisearch not found (MEILI_BIN, PATH, %v); %s", tried, installHint)
}

// RepoRoot returns the repository root, the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return root
}

var repoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no go.mod above the working directory")
		}
		dir = parent
	}
})

// OutputDir returns the directory for what tests leave for people to look
// at, such as screenshots: TOOLGATE_TEST_OUTPUT, else .test-output in the
// repository. It is created if missing and kept after the run.
func OutputDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(envOutput)
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), ".test-output")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testenv: create output directory: %v", err)
	}
	return dir
}
