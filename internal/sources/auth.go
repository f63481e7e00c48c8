package sources

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/db"
)

// Auth is what a credential adds to the requests of a source's upstream:
// headers and query parameters over HTTP, environment variables for a
// stdio server. It remembers every secret it carries so that errors and
// upstream answers can be scrubbed of them. A nil *Auth adds nothing.
type Auth struct {
	Headers map[string]string
	Query   map[string]string
	Env     map[string]string
	secrets []string
}

// AddSecret records a value that must never be shown, e.g. a password
// whose Basic header is in Headers.
func (a *Auth) AddSecret(values ...string) {
	for _, v := range values {
		if v != "" {
			a.secrets = append(a.secrets, v)
		}
	}
}

// SetHeader adds a header whose value is secret.
func (a *Auth) SetHeader(name, value string) {
	if a.Headers == nil {
		a.Headers = map[string]string{}
	}
	a.Headers[name] = value
	a.AddSecret(value)
}

// SetQuery adds a query parameter whose value is secret.
func (a *Auth) SetQuery(name, value string) {
	if a.Query == nil {
		a.Query = map[string]string{}
	}
	a.Query[name] = value
	a.AddSecret(value)
}

// SetEnv adds an environment variable whose value is secret.
func (a *Auth) SetEnv(name, value string) {
	if a.Env == nil {
		a.Env = map[string]string{}
	}
	a.Env[name] = value
	a.AddSecret(value)
}

// Empty reports whether a adds nothing.
func (a *Auth) Empty() bool {
	return a == nil || len(a.Headers) == 0 && len(a.Query) == 0 && len(a.Env) == 0
}

// Apply sets a's headers and query parameters on an outbound request,
// replacing any of the same name. The rest of the query keeps its exact
// encoding and order.
func (a *Auth) Apply(req *http.Request) {
	if a.Empty() {
		return
	}
	for k, v := range a.Headers {
		req.Header.Set(k, v)
	}
	if len(a.Query) > 0 {
		req.URL.RawQuery = a.withQuery(req.URL.RawQuery)
	}
}

// withQuery drops the pairs of raw named by a's query parameters and
// appends a's, in name order.
func (a *Auth) withQuery(raw string) string {
	var kept []string
	for _, pair := range strings.Split(raw, "&") {
		if pair == "" {
			continue
		}
		name, _, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			if _, ours := a.Query[n]; ours {
				continue
			}
		}
		kept = append(kept, pair)
	}
	names := make([]string, 0, len(a.Query))
	for k := range a.Query {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		kept = append(kept, url.QueryEscape(k)+"="+url.QueryEscape(a.Query[k]))
	}
	return strings.Join(kept, "&")
}

// WithQuery returns rawURL with a's query parameters set.
func (a *Auth) WithQuery(rawURL string) string {
	if a == nil || len(a.Query) == 0 {
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.RawQuery = a.withQuery(u.RawQuery)
	return u.String()
}

// Overlay returns base with add's entries on top; base is not changed.
func Overlay(base, add map[string]string) map[string]string {
	if len(add) == 0 {
		return base
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, add)
	return out
}

// Redact replaces every secret a carries, in the forms an error or an
// upstream echo could show it (as is, URL-encoded, JSON-escaped, base64),
// with [Mask].
func (a *Auth) Redact(s string) string {
	if a == nil || len(a.secrets) == 0 || s == "" {
		return s
	}
	forms := make([]string, 0, len(a.secrets)*4)
	for _, v := range a.secrets {
		forms = append(forms, v, url.QueryEscape(v), url.PathEscape(v), base64.StdEncoding.EncodeToString([]byte(v)))
		if j, err := json.Marshal(v); err == nil {
			forms = append(forms, strings.Trim(string(j), `"`))
		}
		// As JavaScript's JSON.stringify and Go's %q write it: & < > kept.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) == nil {
			forms = append(forms, strings.Trim(strings.TrimSpace(b.String()), `"`))
		}
	}
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	for _, f := range forms {
		if f != "" {
			s = strings.ReplaceAll(s, f, Mask)
		}
	}
	return s
}

// RedactError is err with its message redacted; nil stays nil.
func (a *Auth) RedactError(err error) error {
	if err == nil || a == nil || len(a.secrets) == 0 {
		return err
	}
	msg := err.Error()
	if red := a.Redact(msg); red != msg {
		return errors.New(red)
	}
	return err
}

// Credentials gives a saved source's discovery its credential and keeps
// the secret-looking values moved out of a source's configuration.
type Credentials interface {
	// ForDiscovery is the auth a source's discovery uses: the workspace's
	// credential, then the organization's. Nil when there is none.
	ForDiscovery(ctx context.Context, src db.Source) (*Auth, error)
	// Keep stores values (keyed "env.NAME" or "headers.NAME") as the
	// source's credential at the source's own scope, merging them into a
	// custom-headers credential that is already there.
	Keep(ctx context.Context, src db.Source, actorID int64, values map[string]string) error
}
