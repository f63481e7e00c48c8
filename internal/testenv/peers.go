package testenv

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, append([]string{"yoga.mjs", "0"}, args...)...)
	cmd.Dir = PeersDir(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("testenv: start yoga: %v", err)
	}
	t.Cleanup(func() {
		cancel() // yoga is one process: killing it stops the endpoint
		_ = cmd.Wait()
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
		close(port)
	}()
	select {
	case p, ok := <-port:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("testenv: yoga exited before listening:\n%s", stderr.String())
		}
		return "http://127.0.0.1:" + p + "/graphql"
	case <-time.After(30 * time.Second):
		cancel()
		_ = cmd.Wait() // stderr is complete once Wait returns
		t.Fatalf("testenv: yoga did not start within 30 s:\n%s", stderr.String())
	}
	return ""
}
