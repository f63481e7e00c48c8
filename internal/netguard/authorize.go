package netguard

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Authorize returns a copy of client whose requests to the origin (scheme,
// host and port) of target carry headers and query parameters, replacing
// any of the same name. Requests to any other origin, such as a redirect to
// another host or an endpoint an upstream names, go without them. With
// nothing to add, or a target that is not an absolute URL, it returns
// client itself.
//
// The values are set on a clone of each outgoing request, inside the
// transport: the caller's request, and so the URL an error names, never
// shows them.
func Authorize(client *http.Client, target string, headers, query map[string]string) *http.Client {
	if client == nil {
		client = http.DefaultClient
	}
	u, err := url.Parse(target)
	if len(headers) == 0 && len(query) == 0 || err != nil || u.Host == "" {
		return client
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *client
	c.Transport = &authTransport{base: base, origin: Origin(u), headers: headers, query: query}
	return &c
}

// authTransport adds credentials to the requests for one origin.
type authTransport struct {
	base    http.RoundTripper
	origin  string
	headers map[string]string
	query   map[string]string
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if Origin(req.URL) != t.origin {
		return t.base.RoundTrip(req)
	}
	// A RoundTripper must not change the request it is given.
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if len(t.query) > 0 {
		q := req.URL.Query()
		for k, v := range t.query {
			q.Set(k, v)
		}
		req.URL.RawQuery = q.Encode()
	}
	return t.base.RoundTrip(req)
}

// Origin is a URL's scheme, host and port in one spelling: lower case, with
// the scheme's default port made explicit, so "HTTPS://Example.com" and
// "https://example.com:443" are the same origin.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
