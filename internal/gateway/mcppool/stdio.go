package mcppool

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/spawner"
)

// Grace periods of a stdio server's shutdown: after stdin closes, after
// SIGTERM, and after SIGKILL.
const (
	stdinGrace = 500 * time.Millisecond
	termGrace  = 2 * time.Second
	killGrace  = 5 * time.Second
)

// fallbackPATH is given to a stdio server when toolgate itself has no PATH.
const fallbackPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// process is a running stdio MCP server, in its own process group.
type process struct {
	cmd      *exec.Cmd
	stdin    *os.File
	stdout   *os.File
	stderr   *tail
	exited   chan struct{} // closed once the process has been reaped
	waitErr  error         // set before exited closes
	stopOnce sync.Once
}

// startProcess starts cfg's command with the configuration's environment,
// auth's on top, and PATH; nothing else of toolgate's environment.
func startProcess(cfg *sources.MCPConfig, auth *sources.Auth) (*process, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, &configError{"the source has no command to start"}
	}
	var authEnv map[string]string
	if auth != nil {
		authEnv = auth.Env
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = childEnv(sources.Overlay(cfg.Env, authEnv))
	cmd.Dir = cfg.Cwd
	cmd.SysProcAttr = processGroupAttr()
	p := &process{cmd: cmd, stderr: &tail{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	// A grandchild holding stderr open must not keep Wait waiting.
	cmd.WaitDelay = time.Second

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = spawner.Start(cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		var execErr *exec.Error
		if errors.As(err, &execErr) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, &configError{fmt.Sprintf("cannot start %q: %v", cfg.Command, err)}
		}
		return nil, fmt.Errorf("cannot start %q: %w", cfg.Command, err)
	}
	p.stdin, p.stdout = inW, outR
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// reap waits for the process to end.
func (p *process) reap() {
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitReason says how the process ended with the tail of its stderr, or ""
// while it runs. It gives a dying process a moment to be reaped.
func (p *process) exitReason() string {
	if !p.waitExit(300 * time.Millisecond) {
		return ""
	}
	why := "the server process exited"
	if p.waitErr != nil {
		why += " (" + p.waitErr.Error() + ")"
	} else {
		why += " (exit status 0)"
	}
	if s := p.stderr.String(); s != "" {
		why += "; its stderr ends with: " + s
	}
	return why
}

// stop closes stdin (MCP's graceful shutdown), then sends SIGTERM and at
// last SIGKILL to the process group, and returns once the process is
// reaped and the group is empty.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		pgid := p.pid()
		_ = p.stdin.Close()
		p.waitExit(stdinGrace)
		for _, step := range []struct {
			sig   syscall.Signal
			grace time.Duration
		}{{syscall.SIGTERM, termGrace}, {syscall.SIGKILL, killGrace}} {
			if !p.alive(pgid) {
				break
			}
			_ = syscall.Kill(-pgid, step.sig)
			deadline := time.Now().Add(step.grace)
			for p.alive(pgid) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
		p.waitExit(killGrace)
		// A process that left the group may still hold stdout; closing our
		// end ends the SDK's reader.
		_ = p.stdout.Close()
	})
}

// alive reports whether the leader is unreaped or its group has members.
func (p *process) alive(pgid int) bool {
	select {
	case <-p.exited:
	default:
		return true
	}
	return syscall.Kill(-pgid, 0) == nil
}

// childEnv is the environment of a stdio server: its declared variables
// and PATH (toolgate's own unless declared).
func childEnv(declared map[string]string) []string {
	keys := make([]string, 0, len(declared))
	for k := range declared {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		env = append(env, k+"="+declared[k])
	}
	if _, ok := declared["PATH"]; !ok {
		path := os.Getenv("PATH")
		if path == "" {
			path = fallbackPATH
		}
		env = append(env, "PATH="+path)
	}
	return env
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "�"))
}
