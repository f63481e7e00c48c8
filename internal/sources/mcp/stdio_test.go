package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/mcp"
	"github.com/toolgate/toolgate/internal/testenv"
)

// requiredOf returns the "required" list of a JSON Schema.
func requiredOf(t *testing.T, schema json.RawMessage) []string {
	t.Helper()
	var s struct {
		Type     string   `json:"type"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	if s.Type != "object" {
		t.Errorf("schema type = %q, want object", s.Type)
	}
	return s.Required
}

func everythingStdio(t *testing.T) *sources.MCPConfig {
	return &sources.MCPConfig{Transport: sources.TransportStdio, Command: testenv.PeerBin(t, "mcp-server-everything"), Args: []string{"stdio"}}
}

// everythingTools are the tools server-everything lists to a client that
// advertises no capabilities.
var everythingTools = []string{
	"echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
	"get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
	"simulate-research-query", "toggle-simulated-logging", "toggle-subscriber-updates",
	"trigger-long-running-operation",
}

func TestStdioEverything(t *testing.T) {
	d, err, _ := discover(t, context.Background(), everythingStdio(t), mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(everythingTools, toolNames(d)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(d.Server, "mcp-servers/everything ") {
		t.Errorf("Server = %q", d.Server)
	}
	if d.BaseURL != "" || len(d.Warnings) > 0 {
		t.Errorf("BaseURL %q, warnings %v", d.BaseURL, d.Warnings)
	}

	echo := toolByName(t, d, "echo")
	if diff := cmp.Diff([]string{"message"}, requiredOf(t, echo.InputSchema)); diff != "" {
		t.Errorf("echo requires (-want +got):\n%s", diff)
	}
	want := sources.Annotations{ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)}
	if diff := cmp.Diff(want, echo.Annotations); diff != "" {
		t.Errorf("echo annotations (-want +got):\n%s", diff)
	}
	if echo.Title != "Echo Tool" || echo.Description != "Echoes back the input string" || echo.DefaultApproval != sources.ApprovalAuto {
		t.Errorf("echo = %+v", echo)
	}
	if string(echo.Ref) != `{"tool":"echo"}` {
		t.Errorf("echo ref = %s", echo.Ref)
	}
	if diff := cmp.Diff([]string{"a", "b"}, requiredOf(t, toolByName(t, d, "get-sum").InputSchema)); diff != "" {
		t.Errorf("get-sum requires (-want +got):\n%s", diff)
	}
	if got := toolByName(t, d, "get-structured-content"); len(got.OutputSchema) == 0 {
		t.Errorf("get-structured-content has no output schema")
	}
	// readOnlyHint false: calls need approval.
	if got := toolByName(t, d, "toggle-simulated-logging"); got.DefaultApproval != sources.ApprovalRequired {
		t.Errorf("toggle-simulated-logging approval = %s", got.DefaultApproval)
	}

	again, err, _ := discover(t, context.Background(), everythingStdio(t), mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.SpecHash != d.SpecHash || !strings.HasPrefix(d.SpecHash, "sha256:") {
		t.Errorf("SpecHash %s then %s: an unchanged server must hash the same", d.SpecHash, again.SpecHash)
	}
}

func TestStdioFilesystem(t *testing.T) {
	dir := t.TempDir()
	cfg := &sources.MCPConfig{Transport: sources.TransportStdio, Command: testenv.PeerBin(t, "mcp-server-filesystem"), Args: []string{dir}}
	d, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create_directory", "directory_tree", "edit_file", "get_file_info", "list_allowed_directories",
		"list_directory", "list_directory_with_sizes", "move_file", "read_file", "read_media_file",
		"read_multiple_files", "read_text_file", "search_files", "write_file",
	}
	if diff := cmp.Diff(want, toolNames(d)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	read := toolByName(t, d, "read_text_file")
	if diff := cmp.Diff([]string{"path"}, requiredOf(t, read.InputSchema)); diff != "" {
		t.Errorf("read_text_file requires (-want +got):\n%s", diff)
	}
	if read.DefaultApproval != sources.ApprovalAuto || read.Annotations.ReadOnlyHint == nil || !*read.Annotations.ReadOnlyHint {
		t.Errorf("read_text_file: approval %s, annotations %+v", read.DefaultApproval, read.Annotations)
	}
	write := toolByName(t, d, "write_file")
	if diff := cmp.Diff([]string{"content", "path"}, sorted(requiredOf(t, write.InputSchema))); diff != "" {
		t.Errorf("write_file requires (-want +got):\n%s", diff)
	}
	wantWrite := sources.Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)}
	if diff := cmp.Diff(wantWrite, write.Annotations); diff != "" {
		t.Errorf("write_file annotations (-want +got):\n%s", diff)
	}
	if write.DefaultApproval != sources.ApprovalRequired {
		t.Errorf("write_file approval = %s", write.DefaultApproval)
	}
	again, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.SpecHash != d.SpecHash {
		t.Errorf("SpecHash %s then %s", d.SpecHash, again.SpecHash)
	}
}

func TestStdioMemory(t *testing.T) {
	cfg := &sources.MCPConfig{
		Transport: sources.TransportStdio,
		Command:   testenv.PeerBin(t, "mcp-server-memory"),
		Env:       map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")},
	}
	d, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"add_observations", "create_entities", "create_relations", "delete_entities", "delete_observations",
		"delete_relations", "open_nodes", "read_graph", "search_nodes",
	}
	if diff := cmp.Diff(want, toolNames(d)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	create := toolByName(t, d, "create_entities")
	if diff := cmp.Diff([]string{"entities"}, requiredOf(t, create.InputSchema)); diff != "" {
		t.Errorf("create_entities requires (-want +got):\n%s", diff)
	}
	search := toolByName(t, d, "search_nodes")
	if diff := cmp.Diff([]string{"query"}, requiredOf(t, search.InputSchema)); diff != "" {
		t.Errorf("search_nodes requires (-want +got):\n%s", diff)
	}
	if len(search.OutputSchema) == 0 {
		t.Error("search_nodes has no output schema")
	}
	for _, tool := range d.Tools {
		wantApproval := sources.ApprovalRequired
		if tool.Annotations.ReadOnlyHint != nil && *tool.Annotations.ReadOnlyHint {
			wantApproval = sources.ApprovalAuto
		}
		if tool.DefaultApproval != wantApproval {
			t.Errorf("%s: approval %s with annotations %+v", tool.Name, tool.DefaultApproval, tool.Annotations)
		}
	}
	again, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.SpecHash != d.SpecHash {
		t.Errorf("SpecHash %s then %s", d.SpecHash, again.SpecHash)
	}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// TestStdioEnvironment proves the child sees exactly its declared variables
// plus PATH, runs in the configured directory, and has its tools mapped.
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("TOOLGATE_SHOULD_NOT_LEAK", "x")
	dir := t.TempDir()
	cfg := &sources.MCPConfig{
		Transport: sources.TransportStdio,
		Command:   helperBin(t),
		Env:       map[string]string{"DECLARED_VAR": "declared value", "EMPTY_VAR": ""},
		Cwd:       dir,
	}
	d, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(toolByName(t, d, "env").Description, "\n")
	var names []string
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		names = append(names, name)
		switch name {
		case "DECLARED_VAR":
			if value != "declared value" {
				t.Errorf("DECLARED_VAR = %q", value)
			}
		case "PATH":
			if value != os.Getenv("PATH") {
				t.Errorf("PATH = %q, want the server's own %q", value, os.Getenv("PATH"))
			}
		}
	}
	if diff := cmp.Diff([]string{"DECLARED_VAR", "EMPTY_VAR", "PATH", "TOOLGATE_TEST_MARKER"}, names); diff != "" {
		t.Errorf("child environment names (-want +got):\n%s", diff)
	}
	if strings.Contains(strings.Join(env, "\n"), "TOOLGATE_SHOULD_NOT_LEAK") {
		t.Error("the server's environment leaked into the child")
	}
	wantDir, _ := filepath.EvalSymlinks(dir)
	if got := toolByName(t, d, "cwd").Description; got != wantDir {
		t.Errorf("child cwd = %q, want %q", got, wantDir)
	}

	if d.Server != "toolgate-helper 1.0.0" {
		t.Errorf("Server = %q", d.Server)
	}
	read := toolByName(t, d, "read_thing")
	wantRead := sources.Tool{
		Name:            "read_thing",
		Title:           "Read a thing",
		Description:     "Reads a thing.",
		InputSchema:     json.RawMessage(`{"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"}`),
		OutputSchema:    json.RawMessage(`{"properties":{"body":{"type":"string"}},"type":"object"}`),
		Annotations:     sources.Annotations{ReadOnlyHint: ptr(true), IdempotentHint: ptr(false), OpenWorldHint: ptr(false)},
		DefaultApproval: sources.ApprovalAuto,
		Ref:             json.RawMessage(`{"tool":"read_thing"}`),
	}
	if diff := cmp.Diff(wantRead, read); diff != "" {
		t.Errorf("read_thing (-want +got):\n%s", diff)
	}
	del := toolByName(t, d, "delete_thing")
	if del.Title != "Delete a thing" || del.DefaultApproval != sources.ApprovalRequired {
		t.Errorf("delete_thing: title from annotations %q, approval %s", del.Title, del.DefaultApproval)
	}
	wantDel := sources.Annotations{Title: "Delete a thing", ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(true)}
	if diff := cmp.Diff(wantDel, del.Annotations); diff != "" {
		t.Errorf("delete_thing annotations (-want +got):\n%s", diff)
	}
	// Unannotated: MCP's defaults make it potentially destructive.
	if cwd := toolByName(t, d, "cwd"); cwd.DefaultApproval != sources.ApprovalRequired || string(cwd.InputSchema) != `{"type":"object"}` {
		t.Errorf("cwd: approval %s, schema %s", cwd.DefaultApproval, cwd.InputSchema)
	}
}

func TestStdioPagination(t *testing.T) {
	cfg := &sources.MCPConfig{
		Transport: sources.TransportStdio,
		Command:   helperBin(t),
		Env:       map[string]string{"TOOLGATE_HELPER_MODE": "many", "TOOLGATE_HELPER_TOOLS": "250", "TOOLGATE_HELPER_PAGE": "7"},
	}
	d, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tools) != 250 {
		t.Fatalf("got %d tools over 36 pages, want 250", len(d.Tools))
	}
	for i, tool := range d.Tools {
		if want := fmt.Sprintf("tool_%03d", i); tool.Name != want {
			t.Fatalf("tool %d is %q, want %q", i, tool.Name, want)
		}
	}
}

func TestStdioNoTools(t *testing.T) {
	cfg := &sources.MCPConfig{Transport: sources.TransportStdio, Command: helperBin(t), Env: map[string]string{"TOOLGATE_HELPER_MODE": "notools"}}
	d, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tools) != 0 || len(d.Warnings) != 1 || d.SpecHash == "" {
		t.Errorf("tools %v, warnings %v, hash %q", toolNames(d), d.Warnings, d.SpecHash)
	}
}

// TestStdioGrandchildren: a server that started children of its own, one of
// which left the process group, leaves nothing behind after a success.
func TestStdioGrandchildren(t *testing.T) {
	for range 3 {
		cfg := &sources.MCPConfig{Transport: sources.TransportStdio, Command: helperBin(t), Env: map[string]string{"TOOLGATE_HELPER_SPAWN": "1"}}
		if _, err, _ := discover(t, context.Background(), cfg, mcp.Options{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStdioFailures(t *testing.T) {
	helper := helperBin(t)
	missingDir := filepath.Join(t.TempDir(), "gone")
	tests := []struct {
		name    string
		cfg     sources.MCPConfig
		opts    mcp.Options
		want    string
		maxTime time.Duration
	}{
		{
			name:    "command not found",
			cfg:     sources.MCPConfig{Command: "toolgate-no-such-command"},
			want:    `command "toolgate-no-such-command" was not found on the server's PATH`,
			maxTime: time.Second,
		},
		{
			name:    "path not found",
			cfg:     sources.MCPConfig{Command: "/nonexistent/bin/server"},
			want:    `command "/nonexistent/bin/server" was not found`,
			maxTime: time.Second,
		},
		{
			name:    "missing working directory",
			cfg:     sources.MCPConfig{Command: helper, Cwd: missingDir},
			want:    `the working directory "` + missingDir + `" does not exist`,
			maxTime: time.Second,
		},
		{
			name:    "exits at once",
			cfg:     sources.MCPConfig{Command: "/bin/false"},
			want:    "the server exited before answering initialize (exit status 1) without writing anything on stderr",
			maxTime: 2 * time.Second,
		},
		{
			name:    "exits at once, found on PATH",
			cfg:     sources.MCPConfig{Command: "false"},
			want:    "the server exited before answering initialize (exit status 1) without writing anything on stderr",
			maxTime: 2 * time.Second,
		},
		{
			name:    "exits with a reason on stderr",
			cfg:     sources.MCPConfig{Command: helper, Env: map[string]string{"TOOLGATE_HELPER_MODE": "exit"}},
			want:    "the server exited before answering initialize (exit status 3): loading configuration\nfatal: WEATHER_API_KEY is not set",
			maxTime: 2 * time.Second,
		},
		{
			name:    "garbage on stdout",
			cfg:     sources.MCPConfig{Command: helper, Env: map[string]string{"TOOLGATE_HELPER_MODE": "garbage"}},
			want:    `the server wrote something that is not MCP on stdout: "Starting weather server v1.2 on stdio... ready"`,
			maxTime: 5 * time.Second,
		},
		{
			name:    "JSON that is not JSON-RPC on stdout",
			cfg:     sources.MCPConfig{Command: helper, Env: map[string]string{"TOOLGATE_HELPER_MODE": "badjson"}},
			want:    `the server wrote something that is not MCP on stdout: "{\"status\":\"ready\",\"port\":8080}"`,
			maxTime: 5 * time.Second,
		},
		{
			name:    "never answers initialize",
			cfg:     sources.MCPConfig{Command: helper, Env: map[string]string{"TOOLGATE_HELPER_MODE": "silent"}},
			opts:    mcp.Options{InitTimeout: time.Second},
			want:    "the server did not answer initialize within 1s",
			maxTime: 5 * time.Second,
		},
		{
			name: "never answers, ignores SIGTERM, has grandchildren",
			cfg: sources.MCPConfig{Command: helper, Env: map[string]string{
				"TOOLGATE_HELPER_MODE": "silent", "TOOLGATE_HELPER_SPAWN": "1", "TOOLGATE_HELPER_IGNORE_TERM": "1",
			}},
			opts:    mcp.Options{InitTimeout: time.Second},
			want:    "the server did not answer initialize within 1s",
			maxTime: 6 * time.Second,
		},
		{
			name:    "tools/list error",
			cfg:     sources.MCPConfig{Command: helper, Env: map[string]string{"TOOLGATE_HELPER_MODE": "listerror"}},
			want:    "the server answered tools/list with an error: the tool catalog database is unavailable",
			maxTime: 2 * time.Second,
		},
		{
			name:    "exits during tools/list",
			cfg:     sources.MCPConfig{Command: helper, Env: map[string]string{"TOOLGATE_HELPER_MODE": "dieonlist"}},
			want:    "the server exited while listing its tools (exit status 2): panic: catalog corrupted",
			maxTime: 2 * time.Second,
		},
		{
			name:    "whole discovery limit",
			cfg:     sources.MCPConfig{Command: helper, Env: map[string]string{"TOOLGATE_HELPER_MODE": "silent"}},
			opts:    mcp.Options{InitTimeout: time.Minute, Timeout: time.Second},
			want:    "the server did not answer initialize within the discovery limit of 1s",
			maxTime: 5 * time.Second,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Transport = sources.TransportStdio
			d, err, elapsed := discover(t, context.Background(), &cfg, tc.opts)
			if err == nil {
				t.Fatalf("no error; found %v", toolNames(d))
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %q\nwant %q", err, tc.want)
			}
			if elapsed > tc.maxTime {
				t.Errorf("took %s, want at most %s", elapsed, tc.maxTime)
			}
		})
	}
}

// TestStdioInitTimeoutDefault: with default options a silent server fails
// after 10 s with the sentence people see.
func TestStdioInitTimeoutDefault(t *testing.T) {
	t.Parallel()
	cfg := &sources.MCPConfig{Transport: sources.TransportStdio, Command: helperBin(t), Env: map[string]string{"TOOLGATE_HELPER_MODE": "silent"}}
	_, err, elapsed := discover(t, context.Background(), cfg, mcp.Options{})
	if err == nil || err.Error() != "the server did not answer initialize within 10s" {
		t.Fatalf("error = %v", err)
	}
	if elapsed < 10*time.Second || elapsed > 14*time.Second {
		t.Errorf("took %s, want about 10s plus the shutdown", elapsed)
	}
}

// TestStdioCancel: cancelling the context ends discovery and every process.
func TestStdioCancel(t *testing.T) {
	t.Parallel()
	cfg := &sources.MCPConfig{Transport: sources.TransportStdio, Command: helperBin(t), Env: map[string]string{
		"TOOLGATE_HELPER_MODE": "silent", "TOOLGATE_HELPER_SPAWN": "1",
	}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err, elapsed := discover(t, ctx, cfg, mcp.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want one wrapping context.Canceled", err)
	}
	if err.Error() != "discovery was cancelled: context canceled" {
		t.Errorf("error = %q", err)
	}
	if elapsed > 4*time.Second {
		t.Errorf("took %s after cancellation", elapsed)
	}
}

// TestStdioToolgateDies: when toolgate is killed mid-discovery, the kernel
// kills the server (Pdeathsig), so no stdio server outlives toolgate.
func TestStdioToolgateDies(t *testing.T) {
	t.Parallel()
	marker := newMarker(t)
	cfg := sources.MCPConfig{Transport: sources.TransportStdio, Command: helperBin(t), Env: map[string]string{
		"TOOLGATE_HELPER_MODE": "silent", markerVar: marker,
	}}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "cfg.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	toolgate := exec.Command(self)
	toolgate.Env = []string{"PATH=" + os.Getenv("PATH"), asToolgateVar + "=" + path}
	if err := toolgate.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(leftovers(marker)) == 0 {
		if time.Now().After(deadline) {
			_ = toolgate.Process.Kill()
			t.Fatal("the server never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = toolgate.Process.Kill()
	_ = toolgate.Wait()
	deadline = time.Now().Add(2 * time.Second)
	for len(leftovers(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assertNoLeftovers(t, marker)
}
