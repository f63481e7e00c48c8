package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway"
)

// DirectPageSize is how many tools one tools/list page of direct mode holds.
const DirectPageSize = 100

// maxNameLen is the longest function name every major model API accepts.
const maxNameLen = 64

// ToolName is a tool path as a function name every major model API
// accepts (^[A-Za-z0-9_-]{1,64}$): dots become "__", any other character
// "_", and a name that would be longer than 64 characters (or that
// collides) keeps its start and ends in "_" and 8 hex digits of the path's
// SHA-256, so the same path always gets the same name.
func ToolName(path string) string {
	name, lossless := spell(path)
	if lossless && len(name) <= maxNameLen {
		return name
	}
	return hashed(name, path)
}

func spell(path string) (string, bool) {
	var b strings.Builder
	lossless := true
	for _, r := range path {
		switch {
		case r == '.':
			b.WriteString("__")
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			lossless = false
		}
	}
	return b.String(), lossless
}

func hashed(name, path string) string {
	sum := sha256.Sum256([]byte(path))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(name) > maxNameLen-len(suffix) {
		name = name[:maxNameLen-len(suffix)]
	}
	return name + suffix
}

// directServers holds one MCP server per workspace in direct mode, its tool
// list kept equal to the workspace's registry.
type directServers struct {
	h  *Handler
	mu sync.Mutex
	by map[int64]*directServer
}

type directServer struct {
	orgID, workspaceID int64
	server             *mcp.Server
	// syncMu serializes syncs; version and defs belong to it.
	syncMu  sync.Mutex
	version string
	defs    map[string]string // tool name -> hash of its definition
	// tools maps each listed name to its tool, for filtering per caller;
	// replaced as a whole by each sync.
	tools atomic.Pointer[map[string]gateway.Tool]
	// lastUsed is when a request last asked for this server; lastSync when
	// its version was last checked.
	lastUsed, lastSync atomic.Int64
}

// loaded reports whether the server's tools were read at least once.
func (ds *directServer) loaded() bool {
	ds.syncMu.Lock()
	defer ds.syncMu.Unlock()
	return ds.version != ""
}

func newDirectServers(h *Handler) *directServers {
	return &directServers{h: h, by: map[int64]*directServer{}}
}

// get returns the workspace's server, creating and filling it the first
// time; nil when the registry cannot be read.
func (d *directServers) get(ctx context.Context, orgID, workspaceID int64) *mcp.Server {
	d.mu.Lock()
	ds := d.by[workspaceID]
	if ds == nil {
		opts := d.h.serverOptions(directInstructions)
		opts.PageSize = DirectPageSize
		ds = &directServer{
			orgID: orgID, workspaceID: workspaceID, defs: map[string]string{},
			server: mcp.NewServer(&mcp.Implementation{Name: "toolgate", Title: "toolgate", Version: d.h.opts.Version}, opts),
		}
		ds.server.AddReceivingMiddleware(d.h.trackLogLevel, d.hideTools(ds))
		d.h.addGetApproval(ds.server)
		d.by[workspaceID] = ds
	}
	d.mu.Unlock()
	ds.lastUsed.Store(time.Now().UnixNano())
	if time.Since(time.Unix(0, ds.lastSync.Load())) > d.h.opts.PollInterval {
		if err := d.sync(ctx, ds); err != nil {
			d.h.log.Error("mcp: load direct-mode tools", "workspace", workspaceID, "error", err)
			if !ds.loaded() {
				return nil
			}
		}
	}
	return ds.server
}

// tools is the name-to-tool map of a workspace's direct-mode server as
// last synced, nil when this replica has none loaded.
func (d *directServers) tools(workspaceID int64) map[string]gateway.Tool {
	d.mu.Lock()
	ds := d.by[workspaceID]
	d.mu.Unlock()
	if ds == nil {
		return nil
	}
	ds.lastUsed.Store(time.Now().UnixNano())
	if m := ds.tools.Load(); m != nil {
		return *m
	}
	return nil
}

// syncAll brings every server with sessions up to date, and drops servers
// nobody has used for a while.
func (d *directServers) syncAll(ctx context.Context) {
	d.mu.Lock()
	all := make([]*directServer, 0, len(d.by))
	for id, ds := range d.by {
		active := false
		for range ds.server.Sessions() {
			active = true
			break
		}
		if !active && time.Since(time.Unix(0, ds.lastUsed.Load())) > d.h.opts.LocalIdle {
			delete(d.by, id)
			continue
		}
		if active {
			all = append(all, ds)
		}
	}
	d.mu.Unlock()
	for _, ds := range all {
		if err := d.sync(ctx, ds); err != nil {
			d.h.log.Warn("mcp: refresh direct-mode tools", "workspace", ds.workspaceID, "error", err)
		}
	}
}

// sync replaces the server's tools when the registry changed; the SDK
// then sends notifications/tools/list_changed to the server's sessions.
func (d *directServers) sync(ctx context.Context, ds *directServer) error {
	ds.syncMu.Lock()
	defer ds.syncMu.Unlock()
	gw := d.h.opts.Gateway
	version, err := gw.RegistryVersion(ctx, ds.orgID, ds.workspaceID)
	if err != nil {
		return err
	}
	ds.lastSync.Store(time.Now().UnixNano())
	if version == ds.version {
		return nil
	}
	tools, err := gw.ListAll(ctx, ds.orgID, ds.workspaceID)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(tools))
	byName := make(map[string]gateway.Tool, len(tools))
	for _, t := range tools {
		name := ToolName(t.Path)
		if seen[name] || name == GetApprovalTool {
			name = hashed(name, t.Path)
		}
		seen[name] = true
		byName[name] = t
		def := d.definition(name, t)
		hash := definitionHash(def)
		if ds.defs[name] == hash {
			continue
		}
		path := t.Path
		ds.server.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return d.h.call(ctx, req, path, req.Params.Arguments)
		})
		ds.defs[name] = hash
	}
	var gone []string
	for name := range ds.defs {
		if !seen[name] {
			gone = append(gone, name)
			delete(ds.defs, name)
		}
	}
	if len(gone) > 0 {
		ds.server.RemoveTools(gone...)
	}
	ds.tools.Store(&byName)
	ds.version = version
	return nil
}

// hideTools filters each tools/list answer of a workspace's shared server
// for the caller who asked: tools its policies deny whatever the
// arguments are left out, with one rule set per request evaluated in
// memory. (A call of a hidden tool is refused by the gateway anyway.)
func (d *directServers) hideTools(ds *directServer) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method != "tools/list" || err != nil {
				return res, err
			}
			list, ok := res.(*mcp.ListToolsResult)
			if !ok {
				return res, err
			}
			c, ok := callerOf(req.GetExtra())
			if !ok {
				return nil, errors.New("no caller")
			}
			vis, err := d.h.opts.Gateway.Visibility(ctx, c.gatewayCaller())
			if err != nil {
				return nil, err
			}
			byName := ds.tools.Load()
			if byName == nil {
				return res, nil
			}
			kept := make([]*mcp.Tool, 0, len(list.Tools))
			for _, def := range list.Tools {
				if t, known := (*byName)[def.Name]; known && vis.Hidden(t) {
					continue
				}
				kept = append(kept, def)
			}
			out := *list
			out.Tools = kept
			return &out, nil
		}
	}
}

// definition is a registry tool as direct mode lists it: a short
// description (the full one is in the schema's tool page and
// describe_tool), the complete input schema, and the annotations.
func (d *directServers) definition(name string, t gateway.Tool) *mcp.Tool {
	def := &mcp.Tool{Name: name, Title: t.Title, Description: short(t.Description), InputSchema: objectSchema(t.InputSchema)}
	if def.Description == "" {
		// Every tool gets a description, even when its upstream gave none.
		def.Description = fmt.Sprintf("%s, a tool of %s (%s).", t.Path, t.SourceName, t.SourceType)
	}
	if def.Title == "" {
		def.Title = t.Path
	}
	if len(t.Annotations) > 0 && string(t.Annotations) != "null" {
		var a mcp.ToolAnnotations
		if json.Unmarshal(t.Annotations, &a) == nil {
			def.Annotations = &a
		}
	}
	return def
}

// objectSchema is a schema the SDK accepts as a tool's input: a JSON
// object with type "object". Registry schemas are; anything else becomes
// an open object rather than a panic.
func objectSchema(raw json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m["type"] != "object" {
		return json.RawMessage(`{"type":"object"}`)
	}
	return raw
}

func definitionHash(t *mcp.Tool) string {
	b, _ := json.Marshal(t)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
