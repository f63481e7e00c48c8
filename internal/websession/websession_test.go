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
// with a browser's cookie jar to call it. Further replicas over the same
// table start with [site.replica].
type site struct {
	t              *testing.T
	pool           *pgxpool.Pool
	store          *websession.Store
	lifetime, idle time.Duration
	url            string
	browser        *http.Client
	// A request to /slow has loaded its session when it sends to entered,
	// and ends when release is closed (with ?put=1, after a change).
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
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &site{t: t, pool: pool, store: websession.NewStore(pool, 0), lifetime: lifetime, idle: idle,
		browser: &http.Client{Jar: jar}, entered: make(chan struct{}, 1), release: make(chan struct{})}
	s.url = s.replica()
	return s
}

// replica starts another server over the same sessions table and returns
// its URL; the browser's cookies reach it (a cookie ignores the port).
func (s *site) replica() string {
	sessions := websession.New(s.store, s.lifetime, s.idle)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /signin", func(w http.ResponseWriter, r *http.Request) {
		_ = sessions.RenewToken(r.Context())
		sessions.Put(r.Context(), "user", "ada")
	})
	mux.HandleFunc("POST /signout", func(w http.ResponseWriter, r *http.Request) {
		_ = sessions.Destroy(r.Context())
	})
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, sessions.GetString(r.Context(), "user"))
	})
	mux.HandleFunc("GET /read", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("POST /flash", func(w http.ResponseWriter, r *http.Request) {
		sessions.Put(r.Context(), "flash", r.FormValue("msg"))
	})
	mux.HandleFunc("GET /flash", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, sessions.PopString(r.Context(), "flash"))
	})
	mux.HandleFunc("GET /remember", func(w http.ResponseWriter, r *http.Request) {
		sessions.Remember(r.Context(), "workspace", r.FormValue("ws"))
	})
	mux.HandleFunc("GET /deadline", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, sessions.Deadline(r.Context()).Format(time.RFC3339Nano))
	})
	mux.HandleFunc("POST /renew", func(w http.ResponseWriter, r *http.Request) {
		if err := sessions.KeepDeadline(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		s.entered <- struct{}{}
		<-s.release
		if r.FormValue("put") != "" {
			sessions.Put(r.Context(), "seen", "yes")
		}
		_, _ = io.WriteString(w, "a fragment")
	})
	srv := httptest.NewServer(sessions.LoadAndSave(mux))
	s.t.Cleanup(srv.Close)
	return srv.URL
}

// do sends a request from the browser to the first server.
func (s *site) do(method, path string) string {
	s.t.Helper()
	return s.doAt(s.url, method, path)
}

// doAt sends a request from the browser to base and returns the body.
func (s *site) doAt(base, method, path string) string {
	s.t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
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

// whileSlow runs fn while a request to path (/slow or /slow?put=1), which
// loaded the session before fn, is still running; it ends after that
// request.
func (s *site) whileSlow(path string, fn func()) {
	s.t.Helper()
	done := make(chan string, 1)
	go func() {
		resp, err := s.browser.Get(s.url + path)
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
		s.t.Fatalf("%s: %s", path, status)
	}
}

// expiry is the saved expiry of the browser's one live session.
func (s *site) expiry() time.Time {
	s.t.Helper()
	var at time.Time
	if err := s.pool.QueryRow(context.Background(), `SELECT expiry FROM sessions WHERE expiry > now()`).Scan(&at); err != nil {
		s.t.Fatal(err)
	}
	return at
}

// setExpiry moves the saved expiry of every session, as time passing would.
func (s *site) setExpiry(sql string) {
	s.t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE sessions SET expiry = `+sql+` WHERE expiry > now()`); err != nil {
		s.t.Fatal(err)
	}
}

// within fails unless got lies from lo to hi, give or take a second.
func within(t *testing.T, what string, got, lo, hi time.Time) {
	t.Helper()
	if got.Before(lo.Add(-time.Second)) || got.After(hi.Add(time.Second)) {
		t.Fatalf("%s: expiry %s, want from %s to %s", what, got, lo, hi)
	}
}

// TestConcurrentRequestKeepsAChange: a form posts a flash while a fragment
// request of the same browser, which loaded the session before, is still
// running. The fragment's end must not write back the session it read.
func TestConcurrentRequestKeepsAChange(t *testing.T) {
	s := newSite(t, 14*24*time.Hour, 24*time.Hour)
	s.do("POST", "/signin")
	s.whileSlow("/slow", func() { s.do("POST", "/flash?msg=Approved") })
	if got := s.do("GET", "/flash"); got != "Approved" {
		t.Fatalf("the flash after a concurrent request: %q, want %q", got, "Approved")
	}
}

// TestConcurrentRequestKeepsARemoval: the page that shows a flash takes it
// while a fragment request that loaded it is running; it must not come back.
func TestConcurrentRequestKeepsARemoval(t *testing.T) {
	s := newSite(t, 14*24*time.Hour, 24*time.Hour)
	s.do("POST", "/flash?msg=Key+created")
	s.whileSlow("/slow", func() {
		if got := s.do("GET", "/flash"); got != "Key created" {
			t.Fatalf("the flash: %q", got)
		}
	})
	if got := s.do("GET", "/flash"); got != "" {
		t.Fatalf("a taken flash came back: %q", got)
	}
}

// TestSignOutStaysSignedOut: the browser signs out while another of its
// requests, which loaded the session and changes it, is running. That
// request's save must not bring the session back.
func TestSignOutStaysSignedOut(t *testing.T) {
	s := newSite(t, 14*24*time.Hour, 24*time.Hour)
	s.do("POST", "/signin")
	if got := s.do("GET", "/whoami"); got != "ada" {
		t.Fatalf("signed in as %q", got)
	}
	s.whileSlow("/slow?put=1", func() { s.do("POST", "/signout") })
	if got := s.do("GET", "/whoami"); got != "" {
		t.Fatalf("signed in as %q after signing out", got)
	}
}

// TestIdleTimeout: a request that changes nothing moves the session's
// expiry to idle from now, and one within the slack of the last move
// writes nothing; a session left idle past the timeout is gone.
func TestIdleTimeout(t *testing.T) {
	const idle = time.Hour
	s := newSite(t, 14*24*time.Hour, idle)
	before := time.Now()
	s.do("POST", "/signin")
	after := time.Now()
	within(t, "a new session", s.expiry(), before.Add(idle), after.Add(idle))

	// 50 minutes later, by the table, a request reaches another replica
	// (this one moved the expiry just now, at the save, and would skip it).
	other := s.replica()
	s.setExpiry(`now() + interval '10 minutes'`)
	before = time.Now()
	s.doAt(other, "GET", "/read")
	after = time.Now()
	first := s.expiry()
	within(t, "after a request", first, before.Add(idle), after.Add(idle))
	s.doAt(other, "GET", "/read")
	s.do("GET", "/read")
	if again := s.expiry(); !again.Equal(first) {
		t.Fatalf("requests within the slack wrote the session: %s, then %s", first, again)
	}

	// Idle past the timeout: the session is gone.
	s.setExpiry(`now() - interval '1 second'`)
	if got := s.doAt(s.replica(), "GET", "/whoami"); got != "" {
		t.Fatalf("an expired session is still signed in as %q", got)
	}
}

// TestLifetimeLimitsIdle: a session never outlives its lifetime, however
// recently it was used, whether the request saves it or only moves its
// expiry.
func TestLifetimeLimitsIdle(t *testing.T) {
	const lifetime = 10 * time.Minute
	s := newSite(t, lifetime, time.Hour)
	before := time.Now()
	s.do("POST", "/signin")
	after := time.Now()
	end := func(what string) {
		t.Helper()
		within(t, what, s.expiry(), before.Add(lifetime), after.Add(lifetime))
	}
	end("saved")
	s.setExpiry(`now() + interval '1 minute'`)
	s.doAt(s.replica(), "GET", "/read")
	end("moved")
}

// TestKeepDeadline: renewing the token after a change of privilege keeps
// the session's absolute deadline, where scs's RenewToken starts a new
// lifetime.
func TestKeepDeadline(t *testing.T) {
	s := newSite(t, 14*24*time.Hour, 24*time.Hour)
	s.do("POST", "/signin")
	deadline := s.do("GET", "/deadline")
	s.do("POST", "/renew")
	if got := s.do("GET", "/deadline"); got != deadline {
		t.Fatalf("deadline %s after renewing, want %s", got, deadline)
	}
	if got := s.do("GET", "/whoami"); got != "ada" {
		t.Fatalf("after renewing: signed in as %q", got)
	}
}
