package websession_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/websession"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// site is a server whose handlers use the sessions as the console does,
// with a browser's cookie jar to call it.
type site struct {
	t       *testing.T
	pool    *pgxpool.Pool
	srv     *httptest.Server
	browser *http.Client
	// A request to /slow has loaded its session when it sends to entered,
	// and ends when release is closed.
	entered chan struct{}
	release chan struct{}
}

func newSite(t *testing.T, lifetime, idle time.Duration) *site {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	sessions := websession.New(websession.NewStore(pool, 0), lifetime, idle)
	s := &site{t: t, pool: pool, entered: make(chan struct{}, 1), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /flash", func(w http.ResponseWriter, r *http.Request) {
		sessions.Put(r.Context(), "flash", r.FormValue("msg"))
	})
	mux.HandleFunc("GET /flash", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, sessions.PopString(r.Context(), "flash"))
	})
	mux.HandleFunc("GET /remember", func(w http.ResponseWriter, r *http.Request) {
		sessions.Remember(r.Context(), "workspace", r.FormValue("ws"))
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		s.entered <- struct{}{}
		<-s.release
		_, _ = io.WriteString(w, "a fragment")
	})
	s.srv = httptest.NewServer(sessions.LoadAndSave(mux))
	t.Cleanup(s.srv.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.browser = &http.Client{Jar: jar}
	return s
}

// do sends a request from the browser and returns the answer's body.
func (s *site) do(method, path string) string {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := s.browser.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Fatalf("%s %s: %d %s %v", method, path, resp.StatusCode, body, err)
	}
	return string(body)
}

// whileSlow runs fn while a request to /slow, which loaded the session
// before fn, is still running; it ends after that request.
func (s *site) whileSlow(fn func()) {
	s.t.Helper()
	done := make(chan string, 1)
	go func() {
		resp, err := s.browser.Get(s.srv.URL + "/slow")
		if err != nil {
			done <- err.Error()
			return
		}
		resp.Body.Close()
		done <- resp.Status
	}()
	<-s.entered
	fn()
	close(s.release)
	if status := <-done; status != "200 OK" {
		s.t.Fatalf("/slow: %s", status)
	}
}

// expiry is the saved expiry of the browser's one session.
func (s *site) expiry() time.Time {
	s.t.Helper()
	var at time.Time
	if err := s.pool.QueryRow(context.Background(), `SELECT expiry FROM sessions`).Scan(&at); err != nil {
		s.t.Fatal(err)
	}
	return at
}

// TestConcurrentRequestKeepsAChange: a form posts a flash while a fragment
// request of the same browser, which loaded the session before, is still
// running. The fragment's end must not write back the session it read.
func TestConcurrentRequestKeepsAChange(t *testing.T) {
	s := newSite(t, 14*24*time.Hour, 24*time.Hour)
	s.do("GET", "/remember?ws=acme/default") // the session exists
	s.whileSlow(func() { s.do("POST", "/flash?msg=Approved") })
	if got := s.do("GET", "/flash"); got != "Approved" {
		t.Fatalf("the flash after a concurrent request: %q, want %q", got, "Approved")
	}
}

// TestConcurrentRequestKeepsARemoval: the page that shows a flash takes it
// while a fragment request that loaded it is running; it must not come back.
func TestConcurrentRequestKeepsARemoval(t *testing.T) {
	s := newSite(t, 14*24*time.Hour, 24*time.Hour)
	s.do("POST", "/flash?msg=Key+created")
	s.whileSlow(func() {
		if got := s.do("GET", "/flash"); got != "Key created" {
			t.Fatalf("the flash: %q", got)
		}
	})
	if got := s.do("GET", "/flash"); got != "" {
		t.Fatalf("a taken flash came back: %q", got)
	}
}

// TestIdleTimeout: each request moves the session's expiry to idle from
// now (within the slack, which saves a write per request), never past the
// session's lifetime; a session left idle past it is gone.
func TestIdleTimeout(t *testing.T) {
	const idle = time.Hour
	s := newSite(t, 14*24*time.Hour, idle)
	before := time.Now()
	s.do("POST", "/flash?msg=kept")
	after := time.Now()
	within := func(what string, got, lo, hi time.Time) {
		t.Helper()
		if got.Before(lo.Add(-time.Second)) || got.After(hi.Add(time.Second)) {
			t.Fatalf("%s: expiry %s, want from %s to %s", what, got, lo, hi)
		}
	}
	within("a new session", s.expiry(), before.Add(idle), after.Add(idle))

	// 50 minutes later, by the table: a request moves the expiry.
	if _, err := s.pool.Exec(t.Context(), `UPDATE sessions SET expiry = now() + interval '10 minutes'`); err != nil {
		t.Fatal(err)
	}
	before = time.Now()
	s.do("GET", "/remember?ws=acme/default")
	after = time.Now()
	first := s.expiry()
	within("after a request", first, before.Add(idle), after.Add(idle))
	s.do("GET", "/remember?ws=acme/default") // unchanged: nothing to save
	if again := s.expiry(); !again.Equal(first) {
		t.Fatalf("a request within the slack wrote the session: %s, then %s", first, again)
	}

	// Idle past the timeout: the session is gone.
	if _, err := s.pool.Exec(t.Context(), `UPDATE sessions SET expiry = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if got := s.do("GET", "/flash"); got != "" {
		t.Fatalf("an expired session still held %q", got)
	}
}

// TestLifetimeLimitsIdle: a session never outlives its lifetime, however
// recently it was used.
func TestLifetimeLimitsIdle(t *testing.T) {
	const lifetime = 10 * time.Minute
	s := newSite(t, lifetime, time.Hour)
	before := time.Now()
	s.do("POST", "/flash?msg=x")
	after := time.Now()
	for range 2 {
		if got := s.expiry(); got.Before(before.Add(lifetime).Add(-time.Second)) || got.After(after.Add(lifetime).Add(time.Second)) {
			t.Fatalf("expiry %s, want the lifetime's end, from %s to %s", got, before.Add(lifetime), after.Add(lifetime))
		}
		s.do("GET", "/remember?ws=other")
	}
}
