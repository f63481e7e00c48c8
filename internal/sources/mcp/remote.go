package mcp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/sources"
)

func discoverRemote(ctx context.Context, cfg *sources.MCPConfig, opts Options) (*sources.Discovery, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http:// or https:// URL", redact(cfg.URL))
	}
	rt := &headerTransport{base: opts.HTTPClient.Transport, origin: origin(u), headers: cfg.Headers, sse: cfg.Transport == sources.TransportSSE}
	if rt.base == nil {
		rt.base = http.DefaultTransport
	}
	client := *opts.HTTPClient
	client.Transport = rt

	var t sdk.Transport
	if cfg.Transport == sources.TransportSSE {
		t = &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: &client}
	} else {
		t = &sdk.StreamableClientTransport{
			Endpoint:   cfg.URL,
			HTTPClient: &client,
			// Discovery needs no server-initiated messages.
			DisableStandaloneSSE: true,
		}
	}
	d, err := session(ctx, t, opts, func(ctx context.Context, _ phase, err error) error {
		return rt.explain(ctx, u, err)
	})
	if err != nil {
		return nil, err
	}
	d.BaseURL = cfg.URL
	return d, nil
}

// headerTransport adds a source's headers to every request to the server's
// origin (never to another host a redirect or an endpoint event points at)
// and remembers the first answer that shows the URL is not an MCP endpoint.
// It never logs, and its errors never carry header values.
type headerTransport struct {
	base    http.RoundTripper
	origin  string
	headers map[string]string
	sse     bool

	mu      sync.Mutex
	problem *httpProblem
}

// httpProblem is a failed request or a non-MCP answer.
type httpProblem struct {
	method      string
	status      int
	contentType string
	err         error
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && origin(req.URL) == t.origin {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			// The SDK's own protocol headers win.
			if req.Header.Get(k) == "" {
				req.Header.Set(k, v)
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	switch {
	case err != nil:
		if req.Context().Err() == nil {
			t.note(&httpProblem{err: err})
		}
	case resp.StatusCode >= 400 && req.Method != http.MethodDelete:
		t.note(&httpProblem{method: req.Method, status: resp.StatusCode, contentType: mediaType(resp)})
	case mediaType(resp) == "text/html":
		t.note(&httpProblem{method: req.Method, status: resp.StatusCode, contentType: "text/html"})
	}
	return resp, err
}

func (t *headerTransport) note(p *httpProblem) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.problem == nil {
		t.problem = p
	}
}

func mediaType(resp *http.Response) string {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt
}

// explain says what went wrong at the HTTP level, or nil to leave it to
// the generic explanation.
func (t *headerTransport) explain(ctx context.Context, u *url.URL, err error) error {
	if context.Cause(ctx) != nil {
		return nil
	}
	t.mu.Lock()
	p := t.problem
	t.mu.Unlock()
	where := redact(u.String())
	if p != nil && p.err != nil {
		err = p.err
	}
	if p != nil && p.err == nil {
		html := p.contentType == "text/html"
		switch {
		case p.status < 400 && html:
			return fmt.Errorf("the URL answered with an HTML page, not an MCP endpoint (%s)", where)
		case p.status == http.StatusUnauthorized || p.status == http.StatusForbidden:
			return fmt.Errorf("the server refused the request with %d %s: check the headers that carry credentials", p.status, http.StatusText(p.status))
		case t.sse && p.method == http.MethodGet && p.status < 500:
			return fmt.Errorf("the URL answered %d %s to the SSE stream request, so %s is not an SSE endpoint (SSE servers usually serve /sse; for a streamable HTTP server choose the streamable-http transport)", p.status, http.StatusText(p.status), where)
		case p.status == http.StatusNotFound || p.status == http.StatusMethodNotAllowed:
			what := ""
			if html {
				what = " (an HTML page)"
			}
			return fmt.Errorf("the URL answered %d %s%s, so %s is not a streamable HTTP MCP endpoint (those usually serve /mcp; for an SSE server choose the sse transport)", p.status, http.StatusText(p.status), what, where)
		case html:
			return fmt.Errorf("the URL answered %d %s with an HTML page, not an MCP endpoint", p.status, http.StatusText(p.status))
		default:
			return fmt.Errorf("the URL answered %d %s", p.status, http.StatusText(p.status))
		}
	}
	var (
		blocked *netguard.BlockedError
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &blocked):
		return fmt.Errorf("%s: %w", where, blocked)
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused"):
		return fmt.Errorf("nothing accepts connections at %s (connection refused)", u.Host)
	case errors.As(err, &dnsErr):
		return fmt.Errorf("the host %q could not be found", u.Hostname())
	case errors.As(err, &certErr) || errors.As(err, &unknown) || strings.Contains(err.Error(), "x509:"):
		return fmt.Errorf("the TLS certificate of %s is not valid: %v", u.Host, err)
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%s did not answer in time", u.Host)
	case p != nil:
		return fmt.Errorf("could not reach %s: %v", where, err)
	case strings.Contains(err.Error(), "failed to decode response: "):
		_, detail, _ := strings.Cut(err.Error(), "failed to decode response: ")
		return fmt.Errorf("the URL answered with something that is not an MCP message (%s)", detail)
	case strings.Contains(err.Error(), "unsupported content type") || strings.Contains(err.Error(), "missing endpoint"):
		return fmt.Errorf("the URL did not answer like an MCP endpoint: %v", err)
	}
	return nil
}

// origin is a URL's scheme and host, the unit headers are sent to.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// redact shows a URL without user info, query or fragment, which may carry
// secrets.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the URL"
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	return u.String()
}
