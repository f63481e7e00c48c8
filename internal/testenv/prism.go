package testenv

import (
	"strings"
	"testing"
)

// StartPrism serves the OpenAPI document at spec (a file, such as
// PeerPath(t, "@readme/oas-examples/3.0/json/petstore.json")) as a live mock
// with the peers' Prism on a free loopback port, under the pinned Node, and
// returns its base URL (no trailing slash); it stops when the test ends.
// Prism answers with the document's examples, or values built from its
// schemas, and validates requests against it.
func StartPrism(t testing.TB, spec string) string {
	t.Helper()
	// prism mock without --multiprocess is one process.
	argv := []string{PeerBin(t, "node"), PeerBin(t, "prism"), "mock", "-h", "127.0.0.1", "-p", "0", spec}
	return startPeer(t, "prism", argv, func(line string) (string, bool) {
		_, u, ok := strings.Cut(line, "Prism is listening on ")
		return strings.TrimSuffix(strings.TrimSpace(u), "/"), ok
	})
}
