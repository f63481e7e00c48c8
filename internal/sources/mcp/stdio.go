package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

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

// errServerExited cancels a stdio session when its process ends.
var errServerExited = errors.New("the server process exited")

func discoverStdio(ctx context.Context, cfg *sources.MCPConfig, opts Options) (*sources.Discovery, error) {
	p, err := startServer(cfg)
	if err != nil {
		return nil, err
	}
	defer p.stop()

	// The session ends as soon as the process does, even when a
	// grandchild keeps its stdout open.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-p.exited:
			cancel(errServerExited)
		case <-ctx.Done():
		}
	}()

	// Closing the session must not close the pipes: stop does, after it
	// has noted the server's descendants, which the server's exit on
	// stdin's EOF would orphan.
	t := &sdk.IOTransport{Reader: io.NopCloser(p.stdout), Writer: nopWriteCloser{p.stdin}}
	return session(ctx, t, opts, func(ctx context.Context, ph phase, err error) error {
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			return nil // the server answered: it said what went wrong
		}
		return p.explain(ctx, ph, err, opts)
	})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// server is a running stdio MCP server.
type server struct {
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

// startServer starts the configured command with pipes for stdin, stdout and
// stderr, in its own process group.
func startServer(cfg *sources.MCPConfig) (*server, error) {
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
	if err := spawner.Start(cmd); err != nil {
		closeAll()
		return nil, fmt.Errorf("command %q could not be started: %v", cfg.Command, unwrapExec(err))
	}
	// The child holds its own ends now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()

	s := &server{
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

// explain reads a failure through what the process did: exited, or wrote
// something that is not MCP on stdout. A timeout gets the tail of stderr.
func (s *server) explain(ctx context.Context, p phase, err error, opts Options) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, errServerExited) {
		e := explainContext(ctx, p, opts)
		if e == nil || !errors.Is(cause, errInitTimeout) && !errors.Is(cause, errDiscoveryTimeout) {
			return e
		}
		s.settleStderr()
		if t := s.stderr.String(); t != "" {
			return fmt.Errorf("%w; its stderr ends with: %s", e, t)
		}
		return e
	}
	// The connection usually breaks an instant before the process is reaped.
	if s.waitExit(stdinGrace) {
		s.settleStderr()
		status := "exit status unknown"
		if s.cmd.ProcessState != nil {
			status = s.cmd.ProcessState.String()
		}
		msg := "the server exited before answering initialize"
		if p == phaseList {
			msg = "the server exited while listing its tools"
		}
		detail := s.stderr.String()
		if detail == "" {
			if g := s.stdout.garbage(); g != "" {
				detail = fmt.Sprintf("it wrote on stdout: %q", g)
			}
		}
		if detail == "" {
			return fmt.Errorf("%s (%s) without writing anything on stderr", msg, status)
		}
		return fmt.Errorf("%s (%s): %s", msg, status, detail)
	}
	if g := s.stdout.garbage(); g != "" {
		return fmt.Errorf("the server wrote something that is not MCP on stdout: %q", g)
	}
	// JSON that is not JSON-RPC fails in the SDK's decoder.
	if malformed(err) {
		if line := s.stdout.lastLine(); line != "" {
			return fmt.Errorf("the server wrote something that is not MCP on stdout: %q", line)
		}
	}
	return nil
}

// malformed reports the SDK's errors for a message it could not decode.
func malformed(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"invalid message version tag", "invalid character", "cannot unmarshal", "unexpected end of JSON", "invalid trailing data", "empty batch"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func (s *server) waitExit(d time.Duration) bool {
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
func (s *server) settleStderr() {
	select {
	case <-s.stderrDone:
	case <-time.After(200 * time.Millisecond):
	}
}

// stop ends the server and everything it started: it closes stdin (MCP's
// graceful shutdown), then sends SIGTERM and at last SIGKILL to the process
// group and to every descendant that left it, and returns once all of them
// are gone.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		pid := s.cmd.Process.Pid
		// Note the descendants while the tree is intact: one that called
		// setsid is outside the group, and its parent's exit orphans it.
		strays := descendants(pid)
		_ = s.stdin.Close()
		s.waitExit(stdinGrace)
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
		s.waitExit(killGrace)
		s.settleStderr()
		// A process that escaped the group (double fork) may still hold the
		// pipes; closing our ends ends the goroutines reading them.
		_ = s.stdout.Close()
		_ = s.stderrPipe.Close()
	})
}

// alive reports whether the leader is unreaped or any member of its group or
// any noted stray still runs.
func (s *server) alive(pgid int, strays []proc) bool {
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
