package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// spawner starts child processes from one goroutine locked to its OS thread.
// The kernel sends Pdeathsig when the thread that started a child exits, not
// when the process does (go.dev/issue/27505); a thread that lives as long as
// the Supervisor means the signal comes only when toolgate itself dies.
type spawner struct {
	reqs chan spawnRequest
	done chan struct{}
}

type spawnRequest struct {
	cmd   *exec.Cmd
	reply chan error
}

func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan spawnRequest), done: make(chan struct{})}
	go sp.loop()
	return sp
}

func (sp *spawner) loop() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(sp.done)
	for req := range sp.reqs {
		req.reply <- req.cmd.Start()
	}
}

// start starts cmd on the spawner's thread.
func (sp *spawner) start(cmd *exec.Cmd) error {
	reply := make(chan error, 1)
	sp.reqs <- spawnRequest{cmd: cmd, reply: reply}
	return <-reply
}

// close ends the spawner once every child has been stopped.
func (sp *spawner) close() {
	close(sp.reqs)
	<-sp.done
}

// child is one running service process whose output goes to a log file.
type child struct {
	name     string
	cmd      *exec.Cmd
	logPath  string
	done     chan struct{}
	err      error // valid once done is closed
	stopping atomic.Bool
}

// startChild starts cmd with its output appended to logPath. It runs in its
// own process group, so a terminal's Ctrl-C reaches toolgate and not the
// child, and receives deathSig if toolgate dies first.
func startChild(sp *spawner, log *slog.Logger, name string, cmd *exec.Cmd, logPath string, deathSig syscall.Signal) (*child, error) {
	if err := spawn(sp, name, cmd, logPath, deathSig); err != nil {
		return nil, err
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go c.wait(log)
	return c, nil
}

// runChild runs a one-shot command like startChild does and waits for it.
func runChild(sp *spawner, name string, cmd *exec.Cmd, logPath string) error {
	if err := spawn(sp, name, cmd, logPath, syscall.SIGKILL); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return withLog(fmt.Errorf("%s: %w", name, err), logPath)
	}
	return nil
}

// spawn starts cmd on the spawner's thread with its output in logPath.
func spawn(sp *spawner, name string, cmd *exec.Cmd, logPath string, deathSig syscall.Signal) error {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open %s log: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd.Stdin = nil
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = deathSig
	if err := sp.start(cmd); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	return nil
}

func (c *child) wait(log *slog.Logger) {
	c.err = c.cmd.Wait()
	close(c.done)
	if !c.stopping.Load() {
		log.Error("embedded service exited", "service", c.name, "err", c.err, "log", c.logPath)
	}
}

// exited reports whether the process has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends each signal in turn, waiting up to its grace period (or until
// ctx ends) for the process to exit, and kills the process group at last.
func (c *child) stop(ctx context.Context, steps ...stopStep) error {
	c.stopping.Store(true)
	for _, step := range steps {
		if c.exited() {
			return nil
		}
		_ = c.cmd.Process.Signal(step.sig)
		if c.waitFor(ctx, step.grace) {
			return nil
		}
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-c.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", c.name, c.cmd.Process.Pid)
	}
}

// stopStep is one signal of a shutdown sequence and how long to wait after it.
type stopStep struct {
	sig   syscall.Signal
	grace time.Duration
}

// waitFor waits up to d for the process to exit; false when it is still running.
func (c *child) waitFor(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c.done:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return c.exited()
	}
}

// logTail returns the last lines of a log file, for error messages.
func logTail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxBytes = 8 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > maxBytes {
		_, _ = f.Seek(fi.Size()-maxBytes, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// withLog appends the tail of a log file to err.
func withLog(err error, path string) error {
	tail := logTail(path, 20)
	if tail == "" {
		return err
	}
	return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, path, tail)
}

// childEnv is this process's environment without the variables whose prefix
// would change how the child behaves, plus extra.
func childEnv(dropPrefix string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, dropPrefix) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// errExited reports a child that ended while we waited for it to be ready.
var errExited = errors.New("exited during start-up")
