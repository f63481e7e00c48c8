package netguard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	for addr, want := range map[string]bool{ // allowed without AllowPrivate?
		"8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.20.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "::1": false, "fd12::1": false, "::ffff:127.0.0.1": false, "0.0.0.0": false,
	} {
		if got := Check(netip.MustParseAddr(addr), false) == ""; got != want {
			t.Errorf("Check(%s) allowed=%v, want %v", addr, got, want)
		}
	}
	if Check(netip.MustParseAddr("127.0.0.1"), true) != "" {
		t.Error("loopback refused although private networks are allowed")
	}
	if Check(netip.MustParseAddr("169.254.169.254"), true) == "" {
		t.Error("the metadata address is allowed")
	}
}

func TestFetch(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/spec.json", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Write([]byte(`{"openapi":"3.1.0"}`))
	})
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) })
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("<!DOCTYPE html><html><body>Sign in</body></html>"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 2048)) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/spec.json", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	open := NewClient(Options{AllowPrivate: true, Timeout: 500 * time.Millisecond})

	f, err := Fetch(ctx, open, srv.URL+"/redirect", "", 1<<20, nil)
	if err != nil || f.ETag != `"v1"` || string(f.Body) != `{"openapi":"3.1.0"}` {
		t.Fatalf("fetch: %+v %v", f, err)
	}
	if f, err := Fetch(ctx, open, srv.URL+"/spec.json", `"v1"`, 1<<20, nil); err != nil || !f.NotModified {
		t.Fatalf("conditional fetch: %+v %v", f, err)
	}
	for path, want := range map[string]string{
		"/broken": "answered HTTP 500",
		"/html":   "answered with an HTML page",
		"/big":    "larger than the 0 MiB limit",
		"/slow":   "did not answer within 500ms",
		"/nope":   "answered HTTP 404",
	} {
		_, err := Fetch(ctx, open, srv.URL+path, "", 1024, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}

	// Without the allowance, loopback is refused by name, even through a redirect.
	guarded := NewClient(Options{})
	_, err = Fetch(ctx, guarded, srv.URL+"/spec.json", "", 1<<20, nil)
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "a loopback address") || !strings.Contains(err.Error(), "TOOLGATE_ALLOW_PRIVATE_NETWORKS") {
		t.Fatalf("loopback: %v", err)
	}
	_, err = Fetch(ctx, guarded, "http://localhost:"+strings.TrimPrefix(srv.URL, "http://127.0.0.1:")+"/spec.json", "", 1<<20, nil)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("localhost by name: %v", err)
	}
	_, err = Fetch(ctx, guarded, "http://169.254.169.254/latest/meta-data/", "", 1<<20, nil)
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "metadata") {
		t.Fatalf("metadata: %v", err)
	}
}

// A negative timeout sets none: a stream may outlive the 20 s default,
// bounded by its context alone.
func TestNoTimeout(t *testing.T) {
	c := NewClient(Options{AllowPrivate: true, Timeout: -1})
	if c.Timeout != 0 || c.Transport.(*http.Transport).ResponseHeaderTimeout != 0 {
		t.Errorf("Timeout -1 left limits: client %v, response header %v", c.Timeout, c.Transport.(*http.Transport).ResponseHeaderTimeout)
	}
	if d := NewClient(Options{}); d.Timeout != 20*time.Second {
		t.Errorf("default timeout %v", d.Timeout)
	}
}
