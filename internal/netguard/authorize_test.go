package netguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen records the credentials of the requests a server received.
type seen struct {
	mu   sync.Mutex
	reqs []string // "path key=... token=..."
}

func (s *seen) handler(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.URL.Path+" key="+r.URL.Query().Get("api_key")+" token="+r.Header.Get("X-Token")+" auth="+r.Header.Get("Authorization"))
		s.mu.Unlock()
		next(w, r)
	}
}

func (s *seen) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

func TestAuthorize(t *testing.T) {
	const secret = "canary-7d1f/+="
	var other seen
	elsewhere := httptest.NewServer(other.handler(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"openapi":"3.1.0"}`))
	}))
	defer elsewhere.Close()

	var home seen
	mux := http.NewServeMux()
	mux.HandleFunc("/spec.json", home.handler(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != secret || r.URL.Query().Get("api_key") != secret || r.URL.Query().Get("v") != "2" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"openapi":"3.1.0"}`))
	}))
	mux.HandleFunc("/moved", home.handler(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/spec.json?v=2", http.StatusFound)
	}))
	mux.HandleFunc("/away", home.handler(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/spec.json", http.StatusFound)
	}))
	mux.HandleFunc("/broken", home.handler(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	base := NewClient(Options{AllowPrivate: true, Timeout: 5 * time.Second})
	headers := map[string]string{"X-Token": secret, "Authorization": "Bearer " + secret}
	query := map[string]string{"api_key": secret}
	client := Authorize(base, srv.URL+"/moved", headers, query)
	if client == base || base.Transport == client.Transport {
		t.Fatal("Authorize changed or reused the base client")
	}
	ctx := t.Context()

	// Same origin, through a redirect: the credential is on every request.
	if _, err := Fetch(ctx, client, srv.URL+"/moved", "", 1<<20, nil); err != nil {
		t.Fatalf("fetch with the credential: %v", err)
	}
	want := " key=" + secret + " token=" + secret + " auth=Bearer " + secret
	if got := home.list(); len(got) != 2 || got[0] != "/moved"+want || got[1] != "/spec.json"+want {
		t.Errorf("home saw %q", got)
	}

	// The caller's request is not changed.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/spec.json?v=2", nil)
	res, err := client.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("do: %v %v", res, err)
	}
	res.Body.Close()
	if req.Header.Get("X-Token") != "" || req.URL.RawQuery != "v=2" {
		t.Errorf("the request was changed: %v %q", req.Header, req.URL.RawQuery)
	}

	// A redirect to another origin goes there without the credential
	// (Go's client would forward a custom header set on the request).
	if _, err := Fetch(ctx, client, srv.URL+"/away", "", 1<<20, nil); err != nil {
		t.Fatalf("fetch through a redirect away: %v", err)
	}
	if got := other.list(); len(got) != 1 || got[0] != "/spec.json key= token= auth=" {
		t.Errorf("the other origin saw %q", got)
	}

	// Errors name the URL the caller asked for, without the query secret.
	_, err = Fetch(ctx, client, srv.URL+"/broken", "", 1<<20, nil)
	if err == nil || !strings.Contains(err.Error(), "answered HTTP 500") {
		t.Fatalf("broken: %v", err)
	}
	for _, form := range []string{secret, url.QueryEscape(secret)} {
		if strings.Contains(err.Error(), form) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	var status *StatusError
	if !errors.As(err, &status) || status.StatusCode != http.StatusInternalServerError {
		t.Errorf("error %T is not a StatusError", err)
	}

	// Without the client's credential the spec answers 401.
	_, err = Fetch(ctx, base, srv.URL+"/spec.json?v=2", "", 1<<20, nil)
	if !errors.As(err, &status) || status.StatusCode != http.StatusUnauthorized || !strings.Contains(err.Error(), "answered HTTP 401 Unauthorized") {
		t.Errorf("without the credential: %v", err)
	}

	// Nothing to add, or no usable target: the client itself.
	if Authorize(base, srv.URL, nil, nil) != base || Authorize(base, "not a url", headers, nil) != base {
		t.Error("Authorize wrapped a client with nothing to add")
	}
}

func TestOrigin(t *testing.T) {
	for a, b := range map[string]string{
		"HTTPS://Example.com/x":     "https://example.com:443/y?z",
		"http://example.com":        "http://EXAMPLE.com:80",
		"http://[::1]:8080/mcp":     "http://[::1]:8080/sse",
		"http://127.0.0.1:9/a?b=c#": "http://127.0.0.1:9",
	} {
		ua, _ := url.Parse(a)
		ub, _ := url.Parse(b)
		if Origin(ua) != Origin(ub) {
			t.Errorf("Origin(%s) = %s, Origin(%s) = %s", a, Origin(ua), b, Origin(ub))
		}
	}
	for a, b := range map[string]string{
		"http://example.com":      "https://example.com",
		"http://example.com:8080": "http://example.com",
		"http://a.example.com":    "http://example.com",
	} {
		ua, _ := url.Parse(a)
		ub, _ := url.Parse(b)
		if Origin(ua) == Origin(ub) {
			t.Errorf("%s and %s are the same origin %s", a, b, Origin(ua))
		}
	}
}
