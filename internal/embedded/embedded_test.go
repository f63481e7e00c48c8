package embedded

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sup := start(t, Options{DataDir: dir, Postgres: true, Meili: true, Fast: true})

	var got string
	conn := connect(t, sup.DatabaseURL())
	if err := conn.QueryRow(t.Context(), "SELECT current_database() || ' ' || 1").Scan(&got); err != nil {
		t.Fatalf("select: %v", err)
	}
	if got != "toolgate 1" {
		t.Errorf("SELECT current_database(), 1 = %q, want %q", got, "toolgate 1")
	}
	conn.Close(t.Context())

	if code := meiliGet(t, sup.MeiliURL(), "/health", sup.MeiliKey()); code != http.StatusOK {
		t.Errorf("GET /health: status %d, want 200", code)
	}
	if code := meiliGet(t, sup.MeiliURL(), "/version", sup.MeiliKey()); code != http.StatusOK {
		t.Errorf("GET /version with the key: status %d, want 200", code)
	}
	if code := meiliGet(t, sup.MeiliURL(), "/version", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /version without a key: status %d, want 401", code)
	}
	if fi, err := os.Stat(filepath.Join(dir, "meili.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("meili.key: %v, mode %v; want mode 0600", err, fi.Mode().Perm())
	}

	_, err := Start(t.Context(), Options{DataDir: dir, Postgres: true, Meili: true, Fast: true})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Start: %v, want ErrLocked", err)
	}
	want := fmt.Sprintf("data directory %s is in use by another toolgate (pid %d); stop it or set TOOLGATE_DATA_DIR", dir, os.Getpid())
	if err.Error() != want {
		t.Errorf("second Start error:\n got %s\nwant %s", err, want)
	}

	stop(t, sup)
	if err := sup.Stop(t.Context()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if left := processesMentioning(dir); len(left) > 0 {
		t.Errorf("processes left after Stop:\n%s", strings.Join(left, "\n"))
	}
	for _, log := range []string{"postgres.log", "meilisearch.log"} {
		if fi, err := os.Stat(filepath.Join(dir, "logs", log)); err != nil || fi.Size() == 0 {
			t.Errorf("logs/%s: %v; want a non-empty file", log, err)
		}
	}
}

// TestRestartReusesData also uses a data directory too long for a unix
// socket path, so the socket goes to a private directory under /tmp.
func TestRestartReusesData(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), strings.Repeat("long-directory-name-", 5))
	opts := Options{DataDir: dir, Postgres: true, Meili: true, Fast: true}

	first := start(t, opts)
	if !strings.Contains(first.DatabaseURL(), "host=/tmp/toolgate-pg-") {
		t.Errorf("DatabaseURL %s: want a socket under /tmp/toolgate-pg-", first.DatabaseURL())
	}
	conn := connect(t, first.DatabaseURL())
	if _, err := conn.Exec(t.Context(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('run 1')"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	conn.Close(t.Context())
	key, sockDir := first.MeiliKey(), first.pg.sockDir
	stop(t, first)
	if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private socket directory %s after Stop: %v, want it removed", sockDir, err)
	}

	second := start(t, opts)
	defer stop(t, second)
	var v string
	conn = connect(t, second.DatabaseURL())
	defer conn.Close(t.Context())
	if err := conn.QueryRow(t.Context(), "SELECT v FROM kept").Scan(&v); err != nil || v != "run 1" {
		t.Errorf("table from run 1: %q, %v; want %q", v, err, "run 1")
	}
	if second.MeiliKey() != key {
		t.Errorf("Meilisearch key changed between runs")
	}
	if code := meiliGet(t, second.MeiliURL(), "/version", key); code != http.StatusOK {
		t.Errorf("GET /version with the first run's key: status %d, want 200", code)
	}
}

// TestOrphanedPostgres leaves a postmaster running on the cluster, as a
// toolgate killed before it could stop it would, and a postmaster.pid of a
// dead process; Start deals with both.
func TestOrphanedPostgres(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := Options{DataDir: dir, Postgres: true, Fast: true}
	stop(t, start(t, opts))

	orphan := startOrphan(t, dir)
	sup := start(t, opts)
	if alive(orphan) {
		t.Errorf("orphaned postmaster %d still runs after Start", orphan)
	}
	conn := connect(t, sup.DatabaseURL())
	conn.Close(t.Context())
	stop(t, sup)

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "postgres", "postmaster.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stop(t, start(t, opts))
	if left := processesMentioning(dir); len(left) > 0 {
		t.Errorf("processes left after Stop:\n%s", strings.Join(left, "\n"))
	}
}

func TestMissingBinaries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"postgres", Options{Postgres: true, PostgresBinDir: t.TempDir()}, "apt-get install -y postgresql"},
		{"meilisearch", Options{Meili: true, MeiliBin: "/nonexistent/meilisearch"}, "make deps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.DataDir = t.TempDir()
			_, err := Start(t.Context(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Start: %v; want a one-line error naming %q", err, tt.want)
			}
			lock, err := acquireLock(tt.opts.DataDir)
			if err != nil {
				t.Fatalf("lock after a failed Start: %v", err)
			}
			lock.release()
		})
	}
}

// start starts a Supervisor with the test's Meilisearch binary.
func start(t *testing.T, opts Options) *Supervisor {
	t.Helper()
	if opts.Meili {
		opts.MeiliBin = meiliBin(t)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sup, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { sup.Stop(context.Background()) })
	return sup
}

func stop(t *testing.T, sup *Supervisor) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sup.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	return conn
}

// meiliGet returns the status of a GET, with the key as bearer token unless empty.
func meiliGet(t *testing.T, base, path, key string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// meiliBin finds Meilisearch as the test harness does: MEILI_BIN, PATH,
// then .data/bin/meilisearch in the repository.
func meiliBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("MEILI_BIN"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("meilisearch"); err == nil {
		return bin
	}
	dir, _ := os.Getwd()
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
	}
	bin := filepath.Join(dir, ".data", "bin", "meilisearch")
	if !isExecutable(bin) {
		t.Fatalf("meilisearch not found (MEILI_BIN, PATH, %s); install it with: make deps", bin)
	}
	return bin
}

// startOrphan runs a postmaster on dir's cluster behind the supervisor's
// back and returns its pid once it is ready.
func startOrphan(t *testing.T, dir string) int {
	t.Helper()
	binDir, err := findPostgres("")
	if err != nil {
		t.Fatal(err)
	}
	acct, err := postgresAccount()
	if err != nil {
		t.Fatal(err)
	}
	sockDir, _ := socketDir(dir)
	cmd := exec.Command(filepath.Join(binDir, "postgres"), serverArgs(filepath.Join(dir, "postgres"), sockDir, true)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: acct.cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start orphan: %v", err)
	}
	pid := cmd.Process.Pid
	go cmd.Wait() // reap it, as init would
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if conn, err := pgx.Connect(t.Context(), socketURL(sockDir, "postgres")); err == nil {
			conn.Close(t.Context())
			return pid
		}
	}
	t.Fatalf("orphan postmaster did not become ready")
	return 0
}

// processesMentioning lists processes whose command line or working
// directory mentions dir.
func processesMentioning(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(args, dir) || strings.HasPrefix(cwd, dir) {
			found = append(found, fmt.Sprintf("%d: %s (cwd %s)", pid, args, cwd))
		}
	}
	return found
}

func TestMkdirTempSweepsDeadProcesses(t *testing.T) {
	t.Parallel()
	prefix := fmt.Sprintf("toolgate-sweep-%d-test-", time.Now().UnixNano())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-123", prefix, dead.Process.Pid))
	live := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-456", prefix, os.Getppid()))
	for _, d := range []string{stale, live} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	dir, err := MkdirTemp(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if !strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("%s%d-", prefix, os.Getpid())) {
		t.Errorf("MkdirTemp = %s, want the prefix and this pid", dir)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory of a dead process: %v, want it removed", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("directory of a running process: %v, want it kept", err)
	}
}
