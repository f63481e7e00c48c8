package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/internal/validation"
)

// ImportEntry is one server of an MCP client configuration and what it
// becomes.
type ImportEntry struct {
	// Key is the server's name in the client configuration.
	Key    string     `json:"key"`
	Name   string     `json:"name"`
	Config *MCPConfig `json:"config,omitempty"`
	// SecretKeys are env and header values that look secret: the import
	// moves them into the source's credential, out of its configuration.
	SecretKeys []string `json:"secret_keys"`
	// Problem says why the entry cannot be imported; empty when it can.
	Problem string `json:"problem,omitempty"`
}

// clientServer is an mcpServers entry as Claude Desktop, Claude Code,
// Cursor and VS Code write it.
type clientServer struct {
	Type      string            `json:"type"`
	Transport string            `json:"transport"`
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Cwd       string            `json:"cwd"`
	URL       string            `json:"url"`
	ServerURL string            `json:"serverUrl"`
	Headers   map[string]string `json:"headers"`
	Disabled  bool              `json:"disabled"`
}

// ParseClientConfig reads an MCP client configuration: {"mcpServers": {...}}
// (Claude Desktop, Claude Code, Cursor), {"servers": {...}} (VS Code's
// mcp.json) or {"mcp": {"servers": {...}}} (VS Code settings). Entries come
// back sorted by key, each with its problem if it cannot be imported.
func ParseClientConfig(raw []byte, rules Rules) ([]ImportEntry, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, validation.Field("config", "Paste the JSON of an MCP client configuration.")
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Servers    map[string]json.RawMessage `json:"servers"`
		MCP        *struct {
			Servers map[string]json.RawMessage `json:"servers"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, validation.Field("config", "This is not valid JSON: "+err.Error()+".")
	}
	servers := doc.MCPServers
	if servers == nil {
		servers = doc.Servers
	}
	if servers == nil && doc.MCP != nil {
		servers = doc.MCP.Servers
	}
	if len(servers) == 0 {
		return nil, validation.Field("config", `No servers found: expected an "mcpServers" (Claude, Cursor) or "servers" (VS Code) object.`)
	}
	keys := make([]string, 0, len(servers))
	for k := range servers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ImportEntry, 0, len(keys))
	for _, k := range keys {
		out = append(out, importEntry(k, servers[k], rules))
	}
	return out, nil
}

func importEntry(key string, raw json.RawMessage, rules Rules) ImportEntry {
	entry := ImportEntry{Key: key, Name: key, SecretKeys: []string{}}
	var cs clientServer
	if err := json.Unmarshal(raw, &cs); err != nil {
		entry.Problem = "Not a server object: " + err.Error() + "."
		return entry
	}
	cfg := MCPConfig{Command: cs.Command, Args: cs.Args, Env: cs.Env, Cwd: cs.Cwd, URL: cs.URL, Headers: cs.Headers}
	if cfg.URL == "" {
		cfg.URL = cs.ServerURL
	}
	kind := strings.ToLower(cs.Type)
	if kind == "" {
		kind = strings.ToLower(cs.Transport)
	}
	switch {
	case kind == "sse":
		cfg.Transport = TransportSSE
	case kind == "http" || kind == "streamable-http" || kind == "streamablehttp" || kind == "streamable_http":
		cfg.Transport = TransportStreamableHTTP
	case kind == "stdio" || cfg.Command != "":
		cfg.Transport = TransportStdio
	case cfg.URL != "":
		cfg.Transport = TransportStreamableHTTP
	}
	b, _ := json.Marshal(cfg)
	parsed, problems := ParseConfig(TypeMCP, b, rules)
	if len(problems) > 0 {
		entry.Problem = firstProblem(problems)
		return entry
	}
	mc := parsed.(*MCPConfig)
	entry.Config = mc
	entry.SecretKeys = SecretKeys(mc)
	if entry.SecretKeys == nil {
		entry.SecretKeys = []string{}
	}
	if cs.Disabled {
		entry.Problem = "Disabled in the client configuration; it is imported disabled."
	}
	return entry
}

func firstProblem(e validation.Errors) string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return e[keys[0]]
}

// ImportResult reports what an import created.
type ImportResult struct {
	Entries []ImportEntry `json:"entries"`
	// Created maps an entry's key to the new source's id.
	Created map[string]string `json:"created"`
}

// Import creates a source for every importable entry of a client
// configuration; entries with problems, or whose names are taken, are
// reported and skipped.
func (s *Service) Import(ctx context.Context, orgID int64, workspaceID *int64, actorID int64, raw []byte) (ImportResult, error) {
	entries, err := ParseClientConfig(raw, s.Rules)
	if err != nil {
		return ImportResult{}, err
	}
	res := ImportResult{Entries: entries, Created: map[string]string{}}
	for i, e := range entries {
		if e.Config == nil {
			continue
		}
		cfg, _ := json.Marshal(e.Config)
		enabled := !strings.HasPrefix(e.Problem, "Disabled")
		src, err := s.Create(ctx, orgID, workspaceID, Input{Name: e.Name, Type: TypeMCP, Scope: ScopeWorkspace, Enabled: &enabled, Config: cfg, ActorID: actorID})
		var problems validation.Errors
		switch {
		case asErrors(err, &problems):
			res.Entries[i].Problem = firstProblem(problems)
		case err != nil:
			return res, fmt.Errorf("import %s: %w", e.Key, err)
		default:
			res.Created[e.Key] = src.ID
		}
	}
	return res, nil
}

func asErrors(err error, target *validation.Errors) bool {
	e, ok := err.(validation.Errors)
	if ok {
		*target = e
	}
	return ok
}
