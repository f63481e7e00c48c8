package graphql

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testenv"
)

const (
	githubSDLPath  = "@octokit/graphql-schema/schema.graphql"
	githubJSONPath = "@octokit/graphql-schema/schema.json"
)

func peerPath(t *testing.T, rel string) string {
	t.Helper()
	return testenv.PeerPath(t, rel)
}

func nodeBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("node"); err == nil {
		return p
	}
	t.Fatal("node is not installed; install Node.js 20 (apt-get install nodejs) and the test peers with: make test-deps")
	return ""
}

// runNode runs an ES module script with the peers' packages, feeding it
// stdin, and returns its stdout.
func runNode(t *testing.T, script, stdin string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBinary(t), "--input-type=module", "-e", script)
	cmd.Dir = testenv.PeersDir(t)
	cmd.Stdin = strings.NewReader(stdin)
	inGroup(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	return out
}

// startYoga starts the live graphql-yoga endpoint of the test peers and
// returns its URL; it stops with the test.
func startYoga(t *testing.T, args ...string) string {
	t.Helper()
	dir := testenv.PeersDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, nodeBinary(t), append([]string{"yoga.mjs", "0"}, args...)...)
	cmd.Dir = dir
	inGroup(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start yoga: %v", err)
	}
	t.Cleanup(func() {
		cancel() // kills the process group through cmd.Cancel
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
			t.Fatalf("yoga exited before listening:\n%s", stderr.String())
		}
		return fmt.Sprintf("http://127.0.0.1:%s/graphql", p)
	case <-time.After(30 * time.Second):
		t.Fatalf("yoga did not start within 30 s:\n%s", stderr.String())
	}
	return ""
}
