package embedded

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// pgUser is the cluster's superuser and pgDatabase toolgate's database.
	pgUser     = "toolgate"
	pgDatabase = "toolgate"
	// pgSocketName is the socket file PostgreSQL makes for port 5432; with no
	// TCP listener the port only names the socket.
	pgSocketName = ".s.PGSQL.5432"
	// maxSocketPath is the longest unix socket path: sun_path holds 108
	// bytes including the terminating NUL.
	maxSocketPath = 107
	// pgInstallHint ends every "PostgreSQL is missing" error.
	pgInstallHint = "install them with: apt-get install -y postgresql (or make deps)"
)

// postgres is a running private PostgreSQL.
type postgres struct {
	child      *child
	sockDir    string
	privSocket bool // sockDir is a short directory under /tmp to remove at stop
	url        string
}

// startPostgres initializes the cluster on first use, starts the server on
// a unix socket only and creates the toolgate database.
func startPostgres(ctx context.Context, s *Supervisor) (*postgres, error) {
	binDir, err := findPostgres(s.opts.PostgresBinDir)
	if err != nil {
		return nil, err
	}
	acct, err := postgresAccount()
	if err != nil {
		return nil, err
	}
	if err := acct.ensureReachable(s.opts.DataDir); err != nil {
		return nil, err
	}
	cluster := filepath.Join(s.opts.DataDir, "postgres")
	if err := initCluster(ctx, s, binDir, cluster, acct); err != nil {
		return nil, err
	}
	if err := checkVersion(binDir, cluster); err != nil {
		return nil, err
	}
	if err := acct.chownTree(cluster); err != nil {
		return nil, fmt.Errorf("give cluster to the postgres account: %w", err)
	}
	sockDir, priv := socketDir(s.opts.DataDir)
	if err := prepareSocketDir(sockDir, priv, acct); err != nil {
		return nil, err
	}
	if err := clearStalePID(ctx, s.log, cluster); err != nil {
		return nil, err
	}
	pg := &postgres{sockDir: sockDir, privSocket: priv, url: socketURL(sockDir, pgDatabase)}
	cmd := exec.Command(filepath.Join(binDir, "postgres"), serverArgs(cluster, sockDir, s.opts.Fast)...)
	cmd.Dir = cluster
	cmd.Env = childEnv("PG")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: acct.cred}
	pg.child, err = startChild(s.spawn, s.log, "postgresql", cmd, s.logPath("postgres.log"), syscall.SIGINT)
	if err != nil {
		return nil, err
	}
	if err := pg.ready(ctx); err != nil {
		_ = pg.stop(context.Background())
		return nil, withLog(err, pg.child.logPath)
	}
	s.log.Info("postgresql ready", "socket_dir", sockDir, "cluster", cluster)
	return pg, nil
}

// serverArgs are the postgres flags: no TCP, the socket in sockDir, room
// for the many connections of parallel test packages, and durability off
// when fast (tests).
func serverArgs(cluster, sockDir string, fast bool) []string {
	args := []string{
		"-D", cluster,
		"-k", sockDir,
		"-c", "listen_addresses=",
		"-c", "unix_socket_permissions=0700",
		"-c", "max_connections=200",
		"-c", "logging_collector=off",
	}
	if fast {
		args = append(args,
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off")
	}
	return args
}

// stop asks for a fast shutdown, then an immediate one, then kills.
func (pg *postgres) stop(ctx context.Context) error {
	err := pg.child.stop(ctx,
		stopStep{sig: syscall.SIGINT, grace: 15 * time.Second},
		stopStep{sig: syscall.SIGQUIT, grace: 5 * time.Second})
	if pg.privSocket {
		_ = os.RemoveAll(pg.sockDir)
	}
	if err != nil {
		return fmt.Errorf("stop postgresql: %w", err)
	}
	return nil
}

// ready waits until the server accepts connections, then creates the
// toolgate database if it is missing.
func (pg *postgres) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	admin := socketURL(pg.sockDir, "postgres")
	for {
		conn, err := pgx.Connect(ctx, admin)
		if err == nil {
			defer conn.Close(context.Background())
			return createDatabase(ctx, conn, pgDatabase)
		}
		if pg.child.exited() {
			return fmt.Errorf("postgresql %w: %v", errExited, pg.child.err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for postgresql: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// createDatabase creates a database unless it exists.
func createDatabase(ctx context.Context, conn *pgx.Conn, name string) error {
	var exists bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists)
	if err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// socketURL is a pgx URL for a database over the unix socket in dir.
func socketURL(dir, database string) string {
	host := strings.ReplaceAll(url.QueryEscape(dir), "%2F", "/")
	return "postgres:///" + url.PathEscape(database) + "?host=" + host + "&user=" + pgUser
}

// findPostgres returns the directory holding initdb and postgres: dir when
// given, else initdb's from PATH, else the highest /usr/lib/postgresql/N/bin.
func findPostgres(dir string) (string, error) {
	if dir != "" {
		if hasServer(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("PostgreSQL server binaries (initdb, postgres) not found in %s; %s", dir, pgInstallHint)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && hasServer(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	if d := highestDebianBinDir(); d != "" {
		return d, nil
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found; " + pgInstallHint)
}

// highestDebianBinDir returns the newest /usr/lib/postgresql/N/bin with a server.
func highestDebianBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return int(version(b)*100) - int(version(a)*100) })
	for _, d := range dirs {
		if hasServer(d) {
			return d
		}
	}
	return ""
}

// hasServer reports whether dir holds executable initdb and postgres.
func hasServer(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

// isExecutable reports whether path is a regular file with an execute bit.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// initCluster runs initdb once. It initializes a temporary directory and
// renames it into place, so a cluster never exists half made.
func initCluster(ctx context.Context, s *Supervisor, binDir, cluster string, acct account) error {
	if _, err := os.Stat(filepath.Join(cluster, "PG_VERSION")); err == nil {
		return nil
	}
	tmp := cluster + ".init"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove unfinished cluster: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create cluster directory: %w", err)
	}
	if err := acct.chown(tmp); err != nil {
		return err
	}
	args := []string{"-D", tmp, "--username=" + pgUser, "--auth-local=trust", "--auth-host=reject",
		"--encoding=UTF8", "--locale=C"}
	if s.opts.Fast {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), args...)
	cmd.Dir = s.opts.DataDir
	cmd.Env = childEnv("PG")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: acct.cred}
	if err := runChild(s.spawn, "initdb", cmd, s.logPath("postgres.log")); err != nil {
		return err
	}
	if err := os.Rename(tmp, cluster); err != nil {
		return fmt.Errorf("%s exists but holds no PostgreSQL cluster: %w", cluster, err)
	}
	s.log.Info("postgresql cluster initialized", "cluster", cluster)
	return nil
}

// checkVersion refuses a cluster made by another major version than the
// binaries', which PostgreSQL would refuse with a less helpful message.
func checkVersion(binDir, cluster string) error {
	b, err := os.ReadFile(filepath.Join(cluster, "PG_VERSION"))
	if err != nil {
		return fmt.Errorf("read cluster version: %w", err)
	}
	clusterMajor := strings.TrimSpace(string(b))
	out, err := exec.Command(filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return fmt.Errorf("postgres --version: %w", err)
	}
	// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return fmt.Errorf("postgres --version: unexpected output %q", out)
	}
	binMajor, _, _ := strings.Cut(fields[2], ".")
	if binMajor != clusterMajor {
		return fmt.Errorf("the cluster in %s was made by PostgreSQL %s but the binaries in %s are PostgreSQL %s; use version %s binaries or move the cluster away",
			cluster, clusterMajor, binDir, binMajor, clusterMajor)
	}
	return nil
}

// socketDir returns where the server's socket goes: dataDir/run, or, when
// that path would be too long for a unix socket, a short directory under
// /tmp named after the data directory.
func socketDir(dataDir string) (dir string, private bool) {
	dir = filepath.Join(dataDir, "run")
	if len(dir)+1+len(pgSocketName) <= maxSocketPath {
		return dir, false
	}
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join("/tmp", "toolgate-pg-"+hex.EncodeToString(sum[:8])), true
}

// prepareSocketDir creates the socket directory, 0700 and owned by the
// account. A private directory under /tmp must not belong to anyone else.
func prepareSocketDir(dir string, private bool, acct account) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s is not a directory", dir)
	}
	owner := int(fi.Sys().(*syscall.Stat_t).Uid)
	if private && owner != os.Geteuid() && owner != acct.uid {
		return fmt.Errorf("socket directory %s belongs to uid %d; remove it", dir, owner)
	}
	if err := acct.chown(dir); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	return nil
}

// clearStalePID deals with a postmaster.pid left by a run that ended
// without stopping PostgreSQL. A dead pid's file is removed. We hold the
// data directory's lock, so a live postmaster on this cluster is an orphan
// of such a run: it is stopped.
func clearStalePID(ctx context.Context, log *slog.Logger, cluster string) error {
	pidFile := filepath.Join(cluster, "postmaster.pid")
	pid := readPID(pidFile)
	if pid == 0 {
		return nil
	}
	if !alive(pid) || !servesCluster(pid, cluster) {
		if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale postmaster.pid: %w", err)
		}
		return nil
	}
	log.Warn("stopping orphaned postgresql", "pid", pid, "cluster", cluster)
	if err := stopOrphan(ctx, pid); err != nil {
		return err
	}
	_ = os.Remove(pidFile)
	return nil
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// servesCluster reports whether pid is a postgres whose working directory
// (postgres changes into its data directory) or command line is cluster.
func servesCluster(pid int, cluster string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "postgres") {
		return false
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
		real, _ := filepath.EvalSymlinks(cluster)
		return cwd == cluster || cwd == real
	}
	return strings.Contains(string(cmdline), cluster)
}

// stopOrphan stops a postmaster that is not our child: fast shutdown, then
// immediate, then kill, polling for its exit.
func stopOrphan(ctx context.Context, pid int) error {
	steps := []stopStep{
		{sig: syscall.SIGINT, grace: 15 * time.Second},
		{sig: syscall.SIGQUIT, grace: 5 * time.Second},
		{sig: syscall.SIGKILL, grace: 5 * time.Second},
	}
	for _, step := range steps {
		if err := syscall.Kill(pid, step.sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal orphaned postgresql %d: %w", pid, err)
		}
		deadline := time.Now().Add(step.grace)
		for alive(pid) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		if !alive(pid) {
			return nil
		}
	}
	return fmt.Errorf("orphaned postgresql %d did not exit", pid)
}
