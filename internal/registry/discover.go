// Package registry turns sources into stored tools: it runs discovery for
// each source type and saves the result. [Refresher.Refresh] is the one
// function that refreshes a source; the console, the API and (Part 3) the
// worker all go through it.
package registry

import (
	"context"
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
// URL spec that did not change answers notModified and no discovery. Auth,
// when not nil, is the credential every upstream request carries.
func (d *Discoverer) Discover(ctx context.Context, cfg sources.Config, etag string, auth *sources.Auth) (disc *sources.Discovery, notModified bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, DiscoveryTimeout)
	defer cancel()
	switch c := cfg.(type) {
	case *sources.OpenAPIConfig:
		return d.openAPI(ctx, c, etag)
	case *sources.GraphQLConfig:
		if c.Schema != "" {
			disc, err = graphql.FromSchema(c.Schema)
			if disc != nil && c.Endpoint != "" {
				disc.BaseURL = c.Endpoint
			}
		} else {
			disc, err = graphql.Introspect(ctx, d.HTTP, c.Endpoint, nil)
		}
		return disc, false, err
	case *sources.MCPConfig:
		disc, err = mcp.Discover(ctx, c, mcp.Options{HTTPClient: d.HTTP, ClientName: "toolgate", ClientVersion: d.Version})
		return disc, false, err
	}
	return nil, false, fmt.Errorf("unknown source configuration %T", cfg)
}

func (d *Discoverer) openAPI(ctx context.Context, c *sources.OpenAPIConfig, etag string) (*sources.Discovery, bool, error) {
	url := c.SpecURL()
	if url == "" {
		disc, err := openapi.Build(c.SpecDocument(), openapi.Options{BaseURL: c.BaseURL})
		return disc, false, err
	}
	f, err := netguard.Fetch(ctx, d.HTTP, url, etag, sources.MaxSpecBytes, nil)
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
