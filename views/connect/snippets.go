package connect

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// ProtocolVersion is the MCP revision the curl example speaks: the newest
// one with Streamable HTTP sessions (Mcp-Session-Id).
const ProtocolVersion = "2025-11-25"

// Snippet is one client's configuration, ready to copy.
type Snippet struct {
	// ID is the element id the copy button copies.
	ID    string
	Title string
	// Where says where the text goes.
	Where string
	Code  string
}

// Snippets configures each client for mcpURL with key.
func Snippets(mcpURL, key string) []Snippet {
	auth := "Bearer " + key
	return []Snippet{
		{ID: "snippet-claude-code", Title: "Claude Code", Where: "Run in a terminal:",
			Code: ClaudeCode(mcpURL, key)},
		{ID: "snippet-claude-desktop", Title: "Claude Desktop",
			Where: "Add to claude_desktop_config.json (Settings > Developer > Edit Config), then restart Claude. Desktop reaches remote servers through mcp-remote (Node 18 or later).",
			Code:  claudeDesktop(mcpURL, auth)},
		{ID: "snippet-cursor", Title: "Cursor", Where: "Add to ~/.cursor/mcp.json (or .cursor/mcp.json in a project):",
			Code: jsonDoc(map[string]any{"mcpServers": map[string]httpServer{"toolgate": {URL: mcpURL, Headers: map[string]string{"Authorization": auth}}}})},
		{ID: "snippet-vscode", Title: "VS Code", Where: "Add to .vscode/mcp.json in your workspace:",
			Code: jsonDoc(map[string]any{"servers": map[string]httpServer{"toolgate": {Type: "http", URL: mcpURL, Headers: map[string]string{"Authorization": auth}}}})},
		{ID: "snippet-curl", Title: "curl", Where: "Initialize a session, then list the tools (Streamable HTTP by hand):",
			Code: curl(mcpURL, auth)},
	}
}

// ClaudeCode is the command that adds toolgate to Claude Code.
func ClaudeCode(mcpURL, key string) string {
	return fmt.Sprintf(`claude mcp add --transport http toolgate %s --header "Authorization: Bearer %s"`, shellWord(mcpURL), key)
}

// claudeDesktop runs mcp-remote with the header in an environment variable:
// mcp-remote's README notes that some clients mangle spaces inside args.
func claudeDesktop(mcpURL, auth string) string {
	args := []string{"-y", "mcp-remote", mcpURL, "--header", "Authorization:${TOOLGATE_AUTH}"}
	if u, err := url.Parse(mcpURL); err == nil && u.Scheme == "http" {
		args = append(args, "--allow-http")
	}
	return jsonDoc(map[string]any{"mcpServers": map[string]stdioServer{"toolgate": {Command: "npx", Args: args,
		Env: map[string]string{"TOOLGATE_AUTH": auth}}}})
}

// httpServer is a remote server in a client's JSON configuration.
type httpServer struct {
	Type    string            `json:"type,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// stdioServer is a command a client runs.
type stdioServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func curl(mcpURL, auth string) string {
	headers := fmt.Sprintf(` \
  -H "Authorization: %s" \
  -H "Content-Type: application/json" \
  -H "Accept: application/json, text/event-stream" \
  -H "MCP-Protocol-Version: %s"`, auth, ProtocolVersion)
	u := shellQuote(mcpURL)
	var b strings.Builder
	fmt.Fprintf(&b, "# 1. Initialize; the answer's Mcp-Session-Id header names the session.\n")
	fmt.Fprintf(&b, "SESSION=$(curl -sS -D - -o /dev/null %s%s \\\n  -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"curl\",\"version\":\"1.0\"}}}' \\\n  | tr -d '\\r' | awk -F': ' 'tolower($1) == \"mcp-session-id\" {print $2}')\n\n", u, headers, ProtocolVersion)
	fmt.Fprintf(&b, "# 2. Say the client is ready.\n")
	fmt.Fprintf(&b, "curl -sS %s%s \\\n  -H \"Mcp-Session-Id: $SESSION\" \\\n  -d '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}'\n\n", u, headers)
	fmt.Fprintf(&b, "# 3. List the tools.\n")
	fmt.Fprintf(&b, "curl -sS %s%s \\\n  -H \"Mcp-Session-Id: $SESSION\" \\\n  -d '{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}'", u, headers)
	return b.String()
}

// shellWord leaves a URL bare unless the shell would read its ? or &.
func shellWord(s string) string {
	if strings.ContainsAny(s, "?&*[]") {
		return shellQuote(s)
	}
	return s
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func jsonDoc(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
