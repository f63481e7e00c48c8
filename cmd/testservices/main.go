// Command testservices starts one private PostgreSQL and one Meilisearch for
// a whole test run, hands their addresses to a command through the
// environment (TOOLGATE_TEST_DATABASE_URL, TOOLGATE_TEST_MEILI_URL,
// TOOLGATE_TEST_MEILI_KEY), and stops them when the command ends:
//
//	go run ./cmd/testservices -- go test ./...
//
// It exits with the command's status. A service whose variable is already
// set is not started. Signals are passed on to the command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/embedded"
)

func main() {
	// The command is started from the main thread, which lives as long as
	// the process, so its Pdeathsig fires only when testservices dies.
	runtime.LockOSThread()
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: testservices -- command [args...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args()))
}

// run starts the services, runs the command and returns its exit status.
func run(args []string) int {
	if _, err := exec.LookPath(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "testservices: %v\n", err)
		return 127
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-signals: // while starting, a signal abandons the run
			cancel()
		case <-ctx.Done():
		}
	}()
	sup, env, cleanup, err := startServices(ctx, log)
	cancel()
	if err != nil {
		log.Error("test services did not start", "err", err)
		return 1
	}
	defer cleanup()
	code := runCommand(args, env, signals)
	if sup != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := sup.Stop(ctx); err != nil {
			log.Error("test services did not stop", "err", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// startServices starts what the environment does not already provide and
// returns the command's environment and a function removing the files.
func startServices(ctx context.Context, log *slog.Logger) (*embedded.Supervisor, []string, func(), error) {
	env := os.Environ()
	opts := embedded.Options{
		Postgres: os.Getenv("TOOLGATE_TEST_DATABASE_URL") == "",
		Meili:    os.Getenv("TOOLGATE_TEST_MEILI_URL") == "",
		Fast:     true,
		Logger:   log,
	}
	if !opts.Postgres && !opts.Meili {
		return nil, env, func() {}, nil
	}
	if opts.Meili {
		bin, err := meiliBinary()
		if err != nil {
			return nil, nil, nil, err
		}
		opts.MeiliBin = bin
	}
	dir, err := embedded.MkdirTemp("toolgate-testservices-")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	opts.DataDir = dir
	sup, err := embedded.Start(ctx, opts)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	if opts.Postgres {
		env = append(env, "TOOLGATE_TEST_DATABASE_URL="+sup.DatabaseURL())
	}
	if opts.Meili {
		env = append(env, "TOOLGATE_TEST_MEILI_URL="+sup.MeiliURL(), "TOOLGATE_TEST_MEILI_KEY="+sup.MeiliKey())
	}
	log.Info("test services ready", "database_url", sup.DatabaseURL(), "meili_url", sup.MeiliURL())
	return sup, env, cleanup, nil
}

// runCommand runs args with env, its output passed through, forwarding
// signals until it exits, and returns its exit status (128+n when signal
// n ended it).
func runCommand(args, env []string, signals <-chan os.Signal) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testservices: %v\n", err)
		return 127
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-signals:
				_ = cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "testservices: %v\n", err)
			return 1
		}
		return 0
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return exitErr.ExitCode()
}

// meiliBinary finds Meilisearch as the test harness does: MEILI_BIN, PATH,
// TOOLGATE_DATA_DIR/bin, then .data/bin in the repository.
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
	return "", fmt.Errorf("meilisearch not found (MEILI_BIN, PATH, %v); install it with: make deps", tried)
}

// repoRoot is the nearest directory above the working directory with go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
