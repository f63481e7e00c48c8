package testenv

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// PeersDir returns internal/testenv/peers, where .ci/install-deps --test
// installs the pinned npm peers. It fails the test when they are missing.
func PeersDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "internal", "testenv", "peers")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".toolgate-lock-sha256")); err != nil {
		t.Fatalf("testenv: the npm test peers are not installed in %s; install them with: make test-deps", dir)
	}
	return dir
}

// PeerPath returns a file inside the peers' node_modules, such as
// "@readme/oas-examples/3.0/json/petstore.json", failing when it is missing.
func PeerPath(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(PeersDir(t), "node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testenv: %s is missing; install the test peers with: make test-deps", p)
	}
	return p
}

// PeerBin returns an executable of the peers, such as "mcp-server-everything".
func PeerBin(t testing.TB, name string) string {
	t.Helper()
	return PeerPath(t, filepath.Join(".bin", name))
}

// GitHubSpec returns GitHub's REST description (OpenAPI 3.0, 1,223 operations).
func GitHubSpec(t testing.TB) string {
	t.Helper()
	p := filepath.Join(PeersDir(t), "specs", "api.github.com.json")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testenv: %s is missing; install the test peers with: make test-deps", p)
	}
	return p
}

// StartYoga starts the live graphql-yoga endpoint of the peers (yoga.mjs,
// given args such as "--require-header", "X-Api-Key=secret") on a free
// loopback port and returns its URL; it stops when the test ends.
func StartYoga(t testing.TB, args ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("testenv: node is not installed; install Node.js 20 (apt-get install nodejs) and the test peers with: make test-deps")
	}
	return startPeer(t, "yoga", append([]string{node, "yoga.mjs", "0"}, args...), func(line string) (string, bool) {
		port, ok := strings.CutPrefix(line, "listening ")
		return "http://127.0.0.1:" + port + "/graphql", ok
	})
}

// startPeer runs a peer's command line in the peers directory until the
// test ends. It returns what ready makes of the first line of standard
// output it accepts, and fails the test with the peer's output when the
// peer exits first or is not ready within 30 s. The peer must be one
// process, so that killing it stops it.
func startPeer(t testing.TB, name string, argv []string, ready func(line string) (string, bool)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = PeersDir(t)
	cmd.WaitDelay = 5 * time.Second
	var mu sync.Mutex
	var output bytes.Buffer // stdout and stderr, for the failure message
	cmd.Stderr = &lockedWriter{mu: &mu, w: &output}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("testenv: start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			output.WriteString(line + "\n")
			mu.Unlock()
			if v, ok := ready(line); ok {
				select {
				case found <- v:
				default:
				}
			}
		}
		close(found)
	}()
	failed := func(why string) {
		cancel()
		_ = cmd.Wait() // the output is complete once Wait returns
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("testenv: %s %s:\n%s", name, why, output.String())
	}
	select {
	case v, ok := <-found:
		if !ok {
			failed("exited before listening")
		}
		return v
	case <-time.After(30 * time.Second):
		failed("did not listen within 30 s")
	}
	return ""
}

// lockedWriter serializes writes to a buffer shared with a reader.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
