// Package registry turns sources into stored tools: it runs discovery for
// each source type and saves the result. [Refresher.Refresh] is the one
// function that refreshes a source; the console, the API and (Part 3) the
// worker all go through it.
package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/graphql"
	"github.com/toolgate/toolgate/internal/sources/mcp"
	"github.com/toolgate/toolgate/internal/sources/openapi"
)

// DiscoveryTimeout bounds one discovery, whatever the source type.
const DiscoveryTimeout = 60 * time.Second

// Discoverer runs discovery for every source type.
type Discoverer struct {
	// HTTP is the outbound-guarded client for specs, endpoints and remote
	// MCP servers.
	HTTP *http.Client
	// Version is sent to MCP servers as the client version.
	Version string
}

// NewDiscoverer builds a discoverer whose outbound requests obey the guard.
func NewDiscoverer(allowPrivate bool, timeout time.Duration, version string) *Discoverer {
	return &Discoverer{HTTP: netguard.NewClient(netguard.Options{AllowPrivate: allowPrivate, Timeout: timeout}), Version: version}
}

// Discover finds a source's tools without saving anything. With etag set, a
// URL spec that did not change answers notModified and no discovery.
//
// Auth, when not nil, is the credential every upstream request carries:
// its headers and query parameters go on every request to the origin of
// the spec URL, GraphQL endpoint or remote MCP server (over a source's own
// MCP headers), and its environment variables over a stdio server's own.
// Every secret it holds is scrubbed from the error and from the text of
// the tools found, so an upstream that echoes it cannot pass it on.
func (d *Discoverer) Discover(ctx context.Context, cfg sources.Config, etag string, auth *sources.Auth) (disc *sources.Discovery, notModified bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, DiscoveryTimeout)
	defer cancel()
	disc, notModified, err = d.discover(ctx, cfg, etag, auth)
	if err != nil {
		return nil, false, auth.RedactError(err)
	}
	return redactDiscovery(disc, auth), notModified, nil
}

func (d *Discoverer) discover(ctx context.Context, cfg sources.Config, etag string, auth *sources.Auth) (disc *sources.Discovery, notModified bool, err error) {
	switch c := cfg.(type) {
	case *sources.OpenAPIConfig:
		return d.openAPI(ctx, c, etag, auth)
	case *sources.GraphQLConfig:
		if c.Schema != "" {
			disc, err = graphql.FromSchema(c.Schema)
			if disc != nil && c.Endpoint != "" {
				disc.BaseURL = c.Endpoint
			}
		} else {
			disc, err = graphql.Introspect(ctx, d.authorized(c.Endpoint, auth), c.Endpoint, nil)
		}
		return disc, false, err
	case *sources.MCPConfig:
		opts := mcp.Options{HTTPClient: d.HTTP, ClientName: "toolgate", ClientVersion: d.Version}
		if c.Transport == sources.TransportStdio {
			if auth != nil && len(auth.Env) > 0 {
				withEnv := *c
				withEnv.Env = sources.Overlay(c.Env, auth.Env)
				c = &withEnv
			}
		} else {
			opts.HTTPClient = d.authorized(c.URL, auth)
		}
		disc, err = mcp.Discover(ctx, c, opts)
		return disc, false, err
	}
	return nil, false, fmt.Errorf("unknown source configuration %T", cfg)
}

// authorized is the outbound client with auth's headers and query
// parameters on every request to target's origin.
func (d *Discoverer) authorized(target string, auth *sources.Auth) *http.Client {
	if auth == nil {
		return d.HTTP
	}
	return netguard.Authorize(d.HTTP, target, auth.Headers, auth.Query)
}

func (d *Discoverer) openAPI(ctx context.Context, c *sources.OpenAPIConfig, etag string, auth *sources.Auth) (*sources.Discovery, bool, error) {
	url := c.SpecURL()
	if url == "" {
		disc, err := openapi.Build(c.SpecDocument(), openapi.Options{BaseURL: c.BaseURL})
		return disc, false, err
	}
	f, err := netguard.Fetch(ctx, d.authorized(url, auth), url, etag, sources.MaxSpecBytes, nil)
	var status *netguard.StatusError
	if errors.As(err, &status) && (status.StatusCode == http.StatusUnauthorized || status.StatusCode == http.StatusForbidden) {
		if auth == nil || len(auth.Headers) == 0 && len(auth.Query) == 0 {
			return nil, false, fmt.Errorf("%w: the spec needs a credential; add one to the source", err)
		}
		return nil, false, fmt.Errorf("%w: the spec refused the source's credential; check it", err)
	}
	if err != nil {
		return nil, false, err
	}
	if f.NotModified {
		return nil, true, nil
	}
	disc, err := openapi.Build(f.Body, openapi.Options{BaseURL: c.BaseURL, SourceURL: url})
	if disc != nil {
		disc.ETag = f.ETag
	}
	return disc, false, err
}

// redactDiscovery replaces auth's secrets wherever an upstream may have
// echoed them into what discovery found: tool names, titles, descriptions
// and schemas, warnings and the server's name. Schemas stay valid JSON.
// Refs are left alone: they are what a call sends back upstream.
func redactDiscovery(d *sources.Discovery, auth *sources.Auth) *sources.Discovery {
	if d == nil || auth == nil {
		return d
	}
	d.Server = auth.Redact(d.Server)
	for i := range d.Warnings {
		w := &d.Warnings[i]
		w.Subject, w.Message = auth.Redact(w.Subject), auth.Redact(w.Message)
	}
	if p := d.AuthProfile; p != nil {
		p.Note = auth.Redact(p.Note)
	}
	for i := range d.Tools {
		t := &d.Tools[i]
		t.Name = auth.Redact(t.Name)
		t.Title = auth.Redact(t.Title)
		t.Description = auth.Redact(t.Description)
		t.Annotations.Title = auth.Redact(t.Annotations.Title)
		for j := range t.Aliases {
			t.Aliases[j] = auth.Redact(t.Aliases[j])
		}
		t.InputSchema = redactJSON(t.InputSchema, auth)
		t.OutputSchema = redactJSON(t.OutputSchema, auth)
	}
	return d
}

// redactJSON returns raw with auth's secrets replaced in every string and
// key, and a number that spells one replaced by the mask as a string. The
// values are compared decoded, so a secret is found however the upstream
// escaped it. Raw comes back byte for byte when it holds no secret.
func redactJSON(raw json.RawMessage, auth *sources.Auth) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Adapters only produce JSON; should one not, the secret still
		// stays out.
		if red := auth.Redact(string(raw)); red != string(raw) {
			b, _ := json.Marshal(red)
			return b
		}
		return raw
	}
	v, changed := redactValue(v, auth)
	if !changed {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // decoded JSON always encodes
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// redactValue redacts a decoded JSON value and says whether it changed.
func redactValue(v any, auth *sources.Auth) (any, bool) {
	switch v := v.(type) {
	case string:
		red := auth.Redact(v)
		return red, red != v
	case json.Number:
		if red := auth.Redact(v.String()); red != v.String() {
			return red, true
		}
		return v, false
	case []any:
		changed := false
		for i := range v {
			var c bool
			v[i], c = redactValue(v[i], auth)
			changed = changed || c
		}
		return v, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(v))
		for k, e := range v {
			red, c := redactValue(e, auth)
			rk := auth.Redact(k)
			out[rk] = red
			changed = changed || c || rk != k
		}
		return out, changed
	}
	return v, false
}
