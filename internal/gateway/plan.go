package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/gateway/httpcall"
	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/graphql"
	"github.com/toolgate/toolgate/internal/sources/openapi"
)

// sourcePlan is what calls need of a source's configuration, parsed once
// per version of it (the source's updated_at changes with every edit).
type sourcePlan struct {
	updatedAt     time.Time
	configVersion int
	// src is what credentials.Service.Open needs to know of the source.
	src db.Source

	baseURL  string // OpenAPI's configured baseUrl
	endpoint string // GraphQL's configured endpoint
	mcp      *sources.MCPConfig
	// mcpConfigKey is mcppool.Key.Config for mcp.
	mcpConfigKey string
	err          error
}

func (g *Gateway) sourcePlan(orgID int64, t *db.CallTool) *sourcePlan {
	if p, ok := g.sources.get(t.SourceID); ok && p.updatedAt.Equal(t.SourceUpdatedAt) && p.configVersion == t.SourceConfigVersion {
		return p
	}
	p := &sourcePlan{
		updatedAt:     t.SourceUpdatedAt,
		configVersion: t.SourceConfigVersion,
		src:           db.Source{ID: t.SourceID, OrgID: orgID, Type: t.SourceType, Config: t.SourceConfig},
	}
	var err error
	switch sources.Type(t.SourceType) {
	case sources.TypeOpenAPI:
		var c struct {
			BaseURL string `json:"baseUrl"`
		}
		err = json.Unmarshal(t.SourceConfig, &c)
		p.baseURL = c.BaseURL
	case sources.TypeGraphQL:
		var c struct {
			Endpoint string `json:"endpoint"`
		}
		err = json.Unmarshal(t.SourceConfig, &c)
		p.endpoint = c.Endpoint
	case sources.TypeMCP:
		var c sources.MCPConfig
		err = json.Unmarshal(t.SourceConfig, &c)
		p.mcp = &c
		p.mcpConfigKey = mcppool.NewKey(t.SourceID, "", int64(t.SourceConfigVersion), &c, nil).Config
	default:
		err = fmt.Errorf("unknown source type %q", t.SourceType)
	}
	if err != nil {
		p.err = fmt.Errorf("the configuration of source %s cannot be read: %w", t.SourceID, err)
	}
	g.sources.put(t.SourceID, p)
	return p
}

// toolKey names one version of a tool: a source's tools are rewritten
// as a whole, each time under a new generation.
type toolKey struct {
	sourceID, path, docHash string
	generation              int64
}

// toolPlan is what calls need of a tool, prepared once per version of it.
type toolPlan struct {
	// schema checks the arguments; nil when the input schema cannot be
	// compiled (schemaErr says why, and the upstream judges alone).
	schema    *jsonschema.Schema
	schemaErr error
	// flat is the schema when it has the usual shape, for a check that
	// spares the validator the arguments that certainly fit; nil for other
	// schemas.
	flat      *flatSchema
	hasOutput bool

	openapi openapi.Ref
	binary  []httpcall.Option
	graphql graphql.Ref
	// gqlPrefix is `{"query":<document>,"variables":` for a field tool.
	gqlPrefix []byte
	mcpTool   string
	refErr    error
	// annotations are the tool's MCP hints as rules read them.
	annotations map[string]any
}

func (g *Gateway) toolPlan(t *db.CallTool) *toolPlan {
	key := toolKey{t.SourceID, t.Path, t.DocHash, t.SourceGeneration}
	if p, ok := g.tools.get(key); ok {
		return p
	}
	p := &toolPlan{hasOutput: db.Present(t.OutputSchema) && string(t.OutputSchema) != "{}", annotations: annotationsOf(t.Annotations)}
	p.schema, p.schemaErr = compileSchema(t.InputSchema)
	if p.schemaErr == nil {
		p.flat = parseFlatSchema(t.InputSchema)
	} else {
		g.opts.Logger.Warn("tool input schema does not compile; arguments go unchecked", "source", t.SourceID, "tool", t.Path, "error", p.schemaErr.Error())
	}
	switch sources.Type(t.SourceType) {
	case sources.TypeOpenAPI:
		p.refErr = json.Unmarshal(t.Ref, &p.openapi)
		if names := httpcall.BinaryFields(t.InputSchema); len(names) > 0 {
			p.binary = []httpcall.Option{httpcall.WithBinaryFields(names...)}
		}
	case sources.TypeGraphQL:
		p.refErr = json.Unmarshal(t.Ref, &p.graphql)
		if p.refErr == nil && p.graphql.Operation != "raw" {
			doc, _ := json.Marshal(p.graphql.Document)
			p.gqlPrefix = append(append([]byte(`{"query":`), doc...), `,"variables":`...)
		}
	case sources.TypeMCP:
		var ref struct {
			Tool string `json:"tool"`
		}
		p.refErr = json.Unmarshal(t.Ref, &ref)
		p.mcpTool = ref.Tool
	}
	if p.refErr != nil {
		p.refErr = fmt.Errorf("the stored reference of tool %s cannot be read: %w", t.Path, p.refErr)
	}
	g.tools.put(key, p)
	return p
}

// authEntry is a credential opened for one version of it.
type authEntry struct {
	updatedAt time.Time
	stdio     bool
	auth      *sources.Auth
	// fingerprint is mcppool.Fingerprint(auth).
	fingerprint string
}

// credential opens the credential t carries, reusing the opened value
// while the credential's updated_at (and the source's transport, which
// decides between headers and environment) stays the same. It returns a
// nil auth and "" when no credential applies.
func (g *Gateway) credential(ctx context.Context, orgID int64, t *db.CallTool, sp *sourcePlan) (*authEntry, string, error) {
	c := t.Credential(orgID)
	if c == nil {
		return &authEntry{}, "", nil
	}
	stdio := sp.mcp != nil && sp.mcp.Transport == sources.TransportStdio
	if e, ok := g.auths.get(c.ID); ok && e.updatedAt.Equal(c.UpdatedAt) && e.stdio == stdio {
		g.touch(ctx, c.ID)
		return e, c.ID, nil
	}
	if g.opts.Credentials == nil {
		return nil, "", fmt.Errorf("credential %s applies, but the gateway has no credentials service to open it", c.ID)
	}
	auth, err := g.opts.Credentials.Open(ctx, sp.src, *c)
	if err != nil {
		return nil, "", fmt.Errorf("open credential %s: %w", c.ID, err)
	}
	e := &authEntry{updatedAt: c.UpdatedAt, stdio: stdio, auth: auth, fingerprint: mcppool.Fingerprint(auth)}
	g.auths.put(c.ID, e)
	g.touch(ctx, c.ID)
	return e, c.ID, nil
}

// touchEvery is how often a credential's last use is written.
const touchEvery = time.Minute

// touches remembers when each credential's use was last written.
type touches struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// touch records a credential's use, at most once a minute per credential
// from this gateway: the first call after that writes, the others skip
// the database.
func (g *Gateway) touch(ctx context.Context, id string) {
	now := time.Now()
	g.touches.mu.Lock()
	last, ok := g.touches.seen[id]
	due := !ok || now.Sub(last) >= touchEvery
	if due {
		if len(g.touches.seen) >= cacheLimit {
			clear(g.touches.seen)
		}
		g.touches.seen[id] = now
	}
	g.touches.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := g.opts.Store.TouchCredential(ctx, id); err != nil {
		g.opts.Logger.Warn("record credential use", "credential", id, "error", err.Error())
	}
}
