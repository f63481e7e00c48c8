package graphql

import (
	"bytes"
	"context"
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
