package testenv

import (
	"os"
	"path/filepath"
	"testing"
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
