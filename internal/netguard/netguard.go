// Package netguard is toolgate's outbound HTTP client. It refuses to connect
// to loopback, private, link-local (cloud metadata), and other internal
// addresses unless the operator allows private networks, checks every
// address a name resolves to at dial time (so DNS rebinding and redirects
// cannot reach inside), limits redirects, and reads bodies up to a limit.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Options configure a client.
type Options struct {
	// AllowPrivate lets requests reach private and loopback addresses
	// (TOOLGATE_ALLOW_PRIVATE_NETWORKS); metadata addresses stay refused.
	AllowPrivate bool
	// Timeout bounds a whole request; 0 means 20 s, and a negative value
	// sets no bound, for long-lived streams (MCP's SSE) that the caller's
	// context bounds instead.
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed; 0 means 5.
	MaxRedirects int
}

// ErrBlocked is returned for a destination the guard refuses.
var ErrBlocked = errors.New("destination not allowed")

// BlockedError names the refused address.
type BlockedError struct {
	Host string
	Addr netip.Addr
	Why  string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s resolves to %s, %s; outbound requests there are not allowed (an operator can allow private networks with TOOLGATE_ALLOW_PRIVATE_NETWORKS=true)", e.Host, e.Addr, e.Why)
}

func (e *BlockedError) Unwrap() error { return ErrBlocked }

// metadata are cloud metadata endpoints, refused even when private networks are allowed.
var metadata = []netip.Prefix{
	netip.MustParsePrefix("169.254.169.254/32"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("100.100.100.200/32"),
}

// internal are ranges refused unless private networks are allowed.
var internal = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a reserved address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("fc00::/7"), "a private address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// Check says why an address is refused, or "" when it is allowed.
func Check(addr netip.Addr, allowPrivate bool) string {
	addr = addr.Unmap()
	for _, p := range metadata {
		if p.Contains(addr) {
			return "a cloud metadata address"
		}
	}
	if allowPrivate {
		return ""
	}
	for _, r := range internal {
		if r.prefix.Contains(addr) {
			return r.why
		}
	}
	return ""
}

// NewClient returns an HTTP client that enforces opts.
func NewClient(opts Options) *http.Client {
	if opts.Timeout == 0 {
		opts.Timeout = 20 * time.Second
	}
	if opts.MaxRedirects == 0 {
		opts.MaxRedirects = 5
	}
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		// Control runs for every address actually dialled, after resolution,
		// so a name that resolves (or rebinds) to an internal address fails.
		Control: func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			addr, err := netip.ParseAddr(host)
			if err != nil {
				return err
			}
			if why := Check(addr, opts.AllowPrivate); why != "" {
				return &BlockedError{Host: host, Addr: addr, Why: why}
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: max(opts.Timeout, 0),
	}
	return &http.Client{
		Transport: transport,
		Timeout:   max(opts.Timeout, 0),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= opts.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", opts.MaxRedirects)
			}
			return nil
		},
	}
}

// Fetched is a document read by [Fetch].
type Fetched struct {
	Body        []byte
	ETag        string
	ContentType string
	// NotModified is set when the server answered 304 to the ETag sent.
	NotModified bool
}

// Fetch GETs a document of at most maxBytes, sending etag as If-None-Match.
// Its errors are sentences for people: what went wrong with which URL.
func Fetch(ctx context.Context, client *http.Client, url, etag string, maxBytes int64, headers map[string]string) (Fetched, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Fetched{}, fmt.Errorf("%s is not a valid URL: %w", url, err)
	}
	req.Header.Set("Accept", "application/json, application/yaml, text/yaml, application/graphql-response+json, */*;q=0.5")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	res, err := client.Do(req)
	if err != nil {
		return Fetched{}, Explain(url, err, client.Timeout)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotModified && etag != "" {
		return Fetched{ETag: etag, NotModified: true}, nil
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return Fetched{}, &StatusError{URL: url, StatusCode: res.StatusCode}
	}
	if res.ContentLength > maxBytes {
		return Fetched{}, fmt.Errorf("%s is %d MiB, larger than the %d MiB limit", url, res.ContentLength>>20, maxBytes>>20)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBytes+1))
	if err != nil {
		return Fetched{}, Explain(url, err, client.Timeout)
	}
	if int64(len(body)) > maxBytes {
		return Fetched{}, fmt.Errorf("%s is larger than the %d MiB limit", url, maxBytes>>20)
	}
	ct := res.Header.Get("Content-Type")
	if IsHTML(ct, body) {
		return Fetched{}, fmt.Errorf("%s answered with an HTML page, not a machine-readable document", url)
	}
	return Fetched{Body: body, ETag: res.Header.Get("ETag"), ContentType: ct}, nil
}

// StatusError is [Fetch]'s answer to a status other than 2xx (or 304 to a
// conditional request).
type StatusError struct {
	URL        string
	StatusCode int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered HTTP %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
}

// IsHTML reports whether a response is an HTML page.
func IsHTML(contentType string, body []byte) bool {
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "text/html" || mt == "application/xhtml+xml" {
		return true
	}
	head := strings.ToLower(strings.TrimSpace(string(body[:min(len(body), 512)])))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html")
}

// Explain turns a transport error into a sentence naming the URL.
func Explain(url string, err error, timeout time.Duration) error {
	var blocked *BlockedError
	var netErr net.Error
	switch {
	case errors.As(err, &blocked):
		return fmt.Errorf("%s: %w", url, blocked)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		if timeout > 0 {
			return fmt.Errorf("%s did not answer within %s", url, timeout)
		}
		return fmt.Errorf("%s did not answer in time", url)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s refused the connection", url)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("the host of %s could not be resolved (%s)", url, dnsErr.Err)
	}
	return fmt.Errorf("fetching %s: %w", url, err)
}
