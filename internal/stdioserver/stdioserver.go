// Package stdioserver runs the command of a stdio MCP server: in its own
// process group, started from a thread that lives as long as toolgate (so it
// dies with toolgate), with only its declared environment and PATH, and
// stopped with everything it started. Discovery and the call pool both run
// servers through it.
package stdioserver

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/sources"
)

// Grace periods of a stdio server's shutdown: after stdin closes, after
// SIGTERM, and after SIGKILL.
const (
	StdinGrace = 500 * time.Millisecond
	termGrace  = 2 * time.Second
	killGrace  = 5 * time.Second
)

// fallbackPATH is given to a stdio server when toolgate itself has no PATH.
const fallbackPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Process is a running stdio MCP server.
type Process struct {
	cmd        *exec.Cmd
	stdin      *os.File
	stdout     *stdoutWatch
	stderr     *tail
	stderrPipe *os.File
	stderrDone chan struct{}
	exited     chan struct{} // closed once the process has been reaped
	stopOnce   sync.Once
}

// childEnv is the environment of a stdio server: its declared variables and
// PATH (toolgate's own, unless the configuration sets one). Nothing else of
// toolgate's environment reaches the child.
func childEnv(declared map[string]string) (env []string, path string) {
	keys := make([]string, 0, len(declared))
	for k := range declared {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+declared[k])
	}
	path, ok := declared["PATH"]
	if !ok {
		path = os.Getenv("PATH")
		if path == "" {
			path = fallbackPATH
		}
		env = append(env, "PATH="+path)
	}
	return env, path
}

// Start starts the configured command with pipes for stdin, stdout and
// stderr, in its own process group.
func Start(cfg *sources.MCPConfig) (*Process, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, errors.New("the source has no command to start")
	}
	if cfg.Cwd != "" {
		fi, err := os.Stat(cfg.Cwd)
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("the working directory %q does not exist", cfg.Cwd)
		case err != nil:
			return nil, fmt.Errorf("the working directory %q cannot be used: %v", cfg.Cwd, err)
		case !fi.IsDir():
			return nil, fmt.Errorf("the working directory %q is not a directory", cfg.Cwd)
		}
	}
	env, pathList := childEnv(cfg.Env)
	path, err := lookPath(cfg.Command, pathList, cfg.Cwd)
	if err != nil {
		return nil, err
	}

	var files []*os.File // every pipe end, closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		files = append(files, r, w)
		return r, w, err
	}
	closeAll := func() {
		for _, f := range files {
			if f != nil {
				_ = f.Close()
			}
		}
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("create pipes for the server: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{cfg.Command}, cfg.Args...),
		Env:         env,
		Dir:         cfg.Cwd,
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: processGroupAttr(),
	}
	if err := spawn(cmd); err != nil {
		closeAll()
		return nil, fmt.Errorf("command %q could not be started: %v", cfg.Command, unwrapExec(err))
	}
	// The child holds its own ends now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()

	s := &Process{
		cmd:        cmd,
		stdin:      inW,
		stdout:     &stdoutWatch{r: outR},
		stderr:     &tail{},
		stderrPipe: errR,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}
	go func() {
		_, _ = io.Copy(s.stderr, errR)
		_ = errR.Close()
		close(s.stderrDone)
	}()
	go func() {
		_ = cmd.Wait() // cmd.ProcessState says how it ended
		close(s.exited)
	}()
	return s, nil
}

// unwrapExec drops the *exec.Error and *fs.PathError wrappers that repeat
// the command's path.
func unwrapExec(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lookPath finds command the way a shell would with the child's PATH:
// a name with a slash is taken as a path (relative to dir, when set), any
// other name is searched in the absolute directories of pathList.
func lookPath(command, pathList, dir string) (string, error) {
	if strings.ContainsRune(command, '/') {
		p := command
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if p, err := filepath.Abs(p); err == nil {
			switch err := executable(p); {
			case errors.Is(err, fs.ErrNotExist):
				return "", fmt.Errorf("command %q was not found", command)
			case err != nil:
				return "", fmt.Errorf("command %q cannot be run: %v", command, err)
			}
			return p, nil
		}
		return "", fmt.Errorf("command %q was not found", command)
	}
	var denied error
	for _, d := range filepath.SplitList(pathList) {
		if d == "" || !filepath.IsAbs(d) {
			continue // never run something from a relative PATH entry
		}
		p := filepath.Join(d, command)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && denied == nil {
			denied = fmt.Errorf("command %q was found at %s but cannot be run: %v", command, p, err)
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", fmt.Errorf("command %q was not found on the server's PATH", command)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return unwrapExec(err)
	case fi.IsDir():
		return errors.New("it is a directory")
	case fi.Mode()&0o111 == 0:
		return errors.New("it is not executable")
	}
	return nil
}

func (s *Process) WaitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-s.exited:
		return true
	case <-timer.C:
		return false
	}
}

// settleStderr gives the stderr pipe a moment to deliver what the process
// wrote last (a grandchild may keep it open, so it does not wait for EOF).
func (s *Process) settleStderr() {
	select {
	case <-s.stderrDone:
	case <-time.After(200 * time.Millisecond):
	}
}

// Stop ends the server and everything it started: it closes stdin (MCP's
// graceful shutdown), then sends SIGTERM and at last SIGKILL to the process
// group and to every descendant that left it, and returns once all of them
// are gone.
func (s *Process) Stop() {
	s.stopOnce.Do(func() {
		pid := s.cmd.Process.Pid
		// Note the descendants while the tree is intact: one that called
		// setsid is outside the group, and its parent's exit orphans it.
		strays := descendants(pid)
		_ = s.stdin.Close()
		s.WaitExit(StdinGrace)
		for _, step := range []struct {
			sig   signal
			grace time.Duration
		}{{sigTerm, termGrace}, {sigKill, killGrace}} {
			if !s.alive(pid, strays) {
				break
			}
			signalAll(pid, strays, step.sig)
			deadline := time.Now().Add(step.grace)
			for s.alive(pid, strays) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
		s.WaitExit(killGrace)
		s.settleStderr()
		// A process that escaped the group (double fork) may still hold the
		// pipes; closing our ends ends the goroutines reading them.
		_ = s.stdout.Close()
		_ = s.stderrPipe.Close()
	})
}

// alive reports whether the leader is unreaped or any member of its group or
// any noted stray still runs.
func (s *Process) alive(pgid int, strays []proc) bool {
	select {
	case <-s.exited:
	default:
		return true
	}
	return groupAlive(pgid) || straysAlive(strays)
}

// stdoutWatch passes a server's stdout to the SDK and remembers the first
// line that cannot be a JSON-RPC message, and the last line written.
type stdoutWatch struct {
	r    *os.File
	mu   sync.Mutex
	cur  []byte // the start of the line being written
	last string // the start of the last whole line
	bad  string // the first line that does not start like JSON
}

// maxShown is how much of a line on stdout an error shows.
const maxShown = 200

func (w *stdoutWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range p[:n] {
		if c != '\n' {
			if len(w.cur) < maxShown {
				w.cur = append(w.cur, c)
			}
			continue
		}
		if line := strings.TrimSpace(string(w.cur)); line != "" {
			w.last = line
			if w.bad == "" && !looksJSON(line) {
				w.bad = line
			}
		}
		w.cur = w.cur[:0]
	}
	return n, err
}

func looksJSON(line string) bool { return line[0] == '{' || line[0] == '[' }

func (w *stdoutWatch) Close() error { return w.r.Close() }

// garbage returns the first line of stdout that was not JSON-RPC, or "".
func (w *stdoutWatch) garbage() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bad != "" {
		return w.bad
	}
	if line := strings.TrimSpace(string(w.cur)); line != "" && !looksJSON(line) {
		return line
	}
	return ""
}

// lastLine returns the start of the last line written on stdout.
func (w *stdoutWatch) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if line := strings.TrimSpace(string(w.cur)); line != "" {
		return line
	}
	return w.last
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	cut bool
}

const tailSize = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
		t.cut = true
	}
	return len(p), nil
}

// String returns the tail from its first whole line, trimmed, as valid UTF-8.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if t.cut {
		if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "�"))
}

// Stdin is the server's standard input.
func (s *Process) Stdin() io.Writer { return s.stdin }

// Stdout is the server's standard output; Stop closes it.
func (s *Process) Stdout() io.Reader { return s.stdout }

// Exited is closed once the process has ended and been reaped.
func (s *Process) Exited() <-chan struct{} { return s.exited }

// Pid is the process id, also its process group's.
func (s *Process) Pid() int { return s.cmd.Process.Pid }

// Status says how the process ended, e.g. "exit status 3".
func (s *Process) Status() string {
	select {
	case <-s.exited:
	default:
		return "running"
	}
	if s.cmd.ProcessState == nil {
		return "exit status unknown"
	}
	return s.cmd.ProcessState.String()
}

// Stderr is the end of what the server wrote on stderr, after giving the
// pipe a moment to deliver its last words.
func (s *Process) Stderr() string {
	s.settleStderr()
	return s.stderr.String()
}

// Garbage is the first line the server wrote on stdout that cannot be
// JSON-RPC, or "".
func (s *Process) Garbage() string { return s.stdout.garbage() }

// LastLine is the start of the last line the server wrote on stdout.
func (s *Process) LastLine() string { return s.stdout.lastLine() }

// spawner starts children from one goroutine locked to an OS thread that
// never exits. Linux sends a child's Pdeathsig when the thread that started
// it exits, not when the process does (go.dev/issue/27505); starting from a
// thread that lives as long as toolgate means the signal comes only when
// toolgate dies.
var spawner struct {
	once sync.Once
	reqs chan request
}

type request struct {
	cmd   *exec.Cmd
	reply chan error
}

// spawn starts cmd (cmd.Start) on the spawner's thread.
func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan request)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not exit
			for req := range spawner.reqs {
				req.reply <- req.cmd.Start()
			}
		}()
	})
	reply := make(chan error, 1)
	spawner.reqs <- request{cmd: cmd, reply: reply}
	return <-reply
}
