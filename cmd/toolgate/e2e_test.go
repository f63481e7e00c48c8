package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/embedded"
	"github.com/toolgate/toolgate/internal/testenv"
)

// TestEmbeddedDefaultEndToEnd builds the binary, serves on an empty data
// directory, signs in over HTTP, refuses a second server on the same
// directory, and after SIGTERM finds no PostgreSQL or Meilisearch left.
func TestEmbeddedDefaultEndToEnd(t *testing.T) {
	root := testenv.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "toolgate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/toolgate")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dataDir, err := embedded.MkdirTemp("toolgate-e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dataDir) })
	meiliBin := os.Getenv("MEILI_BIN")
	if meiliBin == "" {
		meiliBin = filepath.Join(root, ".data", "bin", "meilisearch")
	}
	addr := freeAddr(t)
	env := append(os.Environ(),
		"DATABASE_URL=", "MEILI_URL=", "MEILI_MASTER_KEY=",
		"TOOLGATE_DATA_DIR="+dataDir, "TOOLGATE_ADDR="+addr, "TOOLGATE_DEMO=true",
		"TOOLGATE_LOG_FORMAT=json", "MEILI_BIN="+meiliBin)

	srv := exec.Command(bin, "serve")
	srv.Env = env
	stdout, _ := srv.StdoutPipe()
	var stderr strings.Builder
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill() })
	printed := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "is ready at") {
				printed <- all.String()
			}
		}
	}()

	base := "http://" + addr
	waitReady(t, base, &stderr)
	// The embedded default made its credentials key once, private to its owner.
	if fi, err := os.Stat(filepath.Join(dataDir, "secret-keys")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v (mode %v)", err, fi)
	}
	var banner string
	select {
	case banner = <-printed:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not print its banner")
	}
	m := regexp.MustCompile(`Password: (\S+)`).FindStringSubmatch(banner)
	if m == nil || !strings.Contains(banner, "demo@toolgate.local") {
		t.Fatalf("banner lacks the demo sign-in:\n%s", banner)
	}
	signIn(t, base, "demo@toolgate.local", m[1])

	// A second server on the same data directory is refused, clearly.
	second := exec.Command(bin, "serve")
	second.Env = append(env, "TOOLGATE_ADDR="+freeAddr(t))
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is in use by another toolgate") {
		t.Fatalf("second server: %v\n%s", err, out)
	}

	// SIGTERM: a clean exit, and no child left behind.
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of SIGTERM")
	}
	if left := processesUsing(dataDir); len(left) > 0 {
		t.Fatalf("processes left behind: %v", left)
	}
	if strings.Contains(stderr.String(), m[1]) {
		t.Fatal("the demo password reached the log")
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(t *testing.T, base string, stderr fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("/readyz never answered 200\n%s", stderr.String())
}

// signIn signs in through the real form and checks the console answers.
func signIn(t *testing.T, base, email, password string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	res, err := c.Get(base + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("sign-in page without CSRF token: %s", body)
	}
	res, err = c.PostForm(base+"/signin", url.Values{"_csrf": {string(m[1])}, "email": {email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(res.Request.URL.Path, "/o/acme/w/default") || !strings.Contains(string(body), "Acme") {
		t.Fatalf("after sign-in: %d at %s", res.StatusCode, res.Request.URL)
	}
}

// processesUsing lists live processes whose command line mentions dir.
func processesUsing(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(cmd, dir) && (strings.Contains(cmd, "postgres") || strings.Contains(cmd, "meilisearch")) {
			found = append(found, e.Name()+": "+cmd)
		}
	}
	return found
}
