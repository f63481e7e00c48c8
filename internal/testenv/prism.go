package testenv

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartPrism serves the OpenAPI document at spec (a file, such as
// PeerPath(t, "@readme/oas-examples/3.0/json/petstore.json")) as a live mock
// with the peers' Prism on a free loopback port, under the pinned Node, and
// returns its base URL (no trailing slash); it stops when the test ends.
// Prism answers with the document's examples, or values built from its
// schemas, and validates requests against it.
func StartPrism(t testing.TB, spec string) string {
	t.Helper()
	node := PeerBin(t, "node")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, PeerBin(t, "prism"), "mock", "-h", "127.0.0.1", "-p", "0", spec)
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
		t.Fatalf("testenv: start prism: %v", err)
	}
	t.Cleanup(func() {
		cancel() // prism mock without --multiprocess is one process
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		const marker = "Prism is listening on "
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			output.WriteString(line + "\n")
			mu.Unlock()
			if _, u, ok := strings.Cut(line, marker); ok {
				ready <- strings.TrimSuffix(strings.TrimSpace(u), "/")
			}
		}
		close(ready)
	}()
	failed := func(why string) {
		cancel()
		_ = cmd.Wait()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("testenv: prism %s:\n%s", why, output.String())
	}
	select {
	case u, ok := <-ready:
		if !ok {
			failed("exited before listening")
		}
		return u
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
