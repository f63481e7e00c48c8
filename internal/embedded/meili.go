package embedded

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// meiliInstallHint ends every "Meilisearch is missing" error.
const meiliInstallHint = "install it with: make deps"

// meili is a running private Meilisearch.
type meili struct {
	child *child
	url   string
	key   string
}

// startMeili starts Meilisearch on a free loopback port (or
// Options.MeiliPort) with the data directory's master key and waits until
// it is healthy. A free port taken by someone else between choosing and
// binding it costs a retry.
func startMeili(ctx context.Context, s *Supervisor) (*meili, error) {
	bin, err := findMeili(s.opts.MeiliBin, s.opts.DataDir)
	if err != nil {
		return nil, err
	}
	key, err := masterKey(filepath.Join(s.opts.DataDir, "meili.key"))
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.opts.DataDir, "meili")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create meilisearch directory: %w", err)
	}
	const attempts = 3
	for attempt := 1; ; attempt++ {
		m, err := launchMeili(ctx, s, bin, dir, key)
		if err == nil {
			s.log.Info("meilisearch ready", "url", m.url, "db", dir)
			return m, nil
		}
		if !errors.Is(err, errExited) || attempt == attempts || s.opts.MeiliPort != 0 {
			return nil, withLog(err, s.logPath("meilisearch.log"))
		}
	}
}

// launchMeili starts one Meilisearch process and waits for /health.
func launchMeili(ctx context.Context, s *Supervisor, bin, dir, key string) (*meili, error) {
	port := s.opts.MeiliPort
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin,
		"--db-path", filepath.Join(dir, "data.ms"),
		"--dump-dir", filepath.Join(dir, "dumps"),
		"--snapshot-dir", filepath.Join(dir, "snapshots"),
		"--http-addr", addr,
		"--env", "development",
		"--no-analytics")
	cmd.Dir = dir // no stray config.toml is read, nothing lands elsewhere
	// The key goes through the environment, not argv, which ps shows.
	cmd.Env = childEnv("MEILI_", "MEILI_MASTER_KEY="+key)
	c, err := startChild(s.spawn, s.log, "meilisearch", cmd, s.logPath("meilisearch.log"), syscall.SIGTERM)
	if err != nil {
		return nil, err
	}
	m := &meili{child: c, url: "http://" + addr, key: key}
	if err := m.waitHealthy(ctx, 60*time.Second); err != nil {
		_ = m.stop(context.Background())
		return nil, err
	}
	return m, nil
}

// waitHealthy polls GET /health until it answers 200.
func (m *meili) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		err := health(ctx, client, m.url)
		if err == nil {
			return nil
		}
		if m.child.exited() {
			return fmt.Errorf("meilisearch %w: %v", errExited, m.child.err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for meilisearch: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// health asks Meilisearch's /health once.
func health(ctx context.Context, client *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: status %d", resp.StatusCode)
	}
	return nil
}

// stop asks Meilisearch to exit, then kills it.
func (m *meili) stop(ctx context.Context) error {
	if err := m.child.stop(ctx, stopStep{sig: syscall.SIGTERM, grace: 10 * time.Second}); err != nil {
		return fmt.Errorf("stop meilisearch: %w", err)
	}
	return nil
}

// findMeili returns the Meilisearch binary: bin when given, else
// meilisearch from PATH, else dataDir/bin/meilisearch (where make deps
// puts it).
func findMeili(bin, dataDir string) (string, error) {
	if bin != "" {
		if isExecutable(bin) {
			return bin, nil
		}
		return "", fmt.Errorf("meilisearch binary %s is missing or not executable; %s", bin, meiliInstallHint)
	}
	if p, err := exec.LookPath("meilisearch"); err == nil {
		return p, nil
	}
	p := filepath.Join(dataDir, "bin", "meilisearch")
	if isExecutable(p) {
		return p, nil
	}
	return "", fmt.Errorf("meilisearch not found in PATH or at %s; %s", p, meiliInstallHint)
}

// masterKey reads the data directory's Meilisearch master key, creating it
// (32 random bytes, hex, mode 0600) on first use.
func masterKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(b)) != "" {
		if err := os.Chmod(path, 0o600); err != nil {
			return "", fmt.Errorf("meilisearch key: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read meilisearch key: %w", err)
	}
	key := hex.EncodeToString(randomBytes(32))
	if err := writeFileAtomic(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write meilisearch key: %w", err)
	}
	return key, nil
}

// randomBytes returns n bytes from the system's random source.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return b
}

// writeFileAtomic writes a file under a temporary name and renames it.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
