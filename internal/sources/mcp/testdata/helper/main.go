// Command helper is a stdio MCP server for the tests of package mcp. Its
// behaviour comes from its environment, which is all Discover gives it:
//
//	TOOLGATE_HELPER_MODE   "" (tools env, cwd and a few annotated ones), "many"
//	                       (TOOLGATE_HELPER_TOOLS tools in pages of
//	                       TOOLGATE_HELPER_PAGE), "silent" (never answers),
//	                       "garbage" (prints a banner on stdout), "badjson"
//	                       (prints JSON that is not JSON-RPC), "exit"
//	                       (complains on stderr and exits 3), "listerror"
//	                       (tools/list fails), "dieonlist" (exits during
//	                       tools/list), "notools" (no tools capability),
//	                       "sleep" (a grandchild that just waits)
//	TOOLGATE_HELPER_SPAWN  "1": first start two "sleep" grandchildren, one in
//	                       the process group and one in a session of its own
//	TOOLGATE_HELPER_IGNORE_TERM "1": ignore SIGTERM
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	mode := os.Getenv("TOOLGATE_HELPER_MODE")
	if os.Getenv("TOOLGATE_HELPER_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	if mode == "sleep" {
		time.Sleep(time.Hour)
		return
	}
	if os.Getenv("TOOLGATE_HELPER_SPAWN") == "1" {
		spawnSleepers()
	}
	switch mode {
	case "silent":
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour) // still running after stdin closes
		return
	case "garbage":
		fmt.Println("Starting weather server v1.2 on stdio... ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		return
	case "badjson":
		fmt.Println(`{"status":"ready","port":8080}`)
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		return
	case "exit":
		fmt.Fprintln(os.Stderr, "loading configuration")
		fmt.Fprintln(os.Stderr, "fatal: WEATHER_API_KEY is not set")
		os.Exit(3)
	}

	opts := &mcp.ServerOptions{}
	if mode == "many" {
		opts.PageSize, _ = strconv.Atoi(os.Getenv("TOOLGATE_HELPER_PAGE"))
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "toolgate-helper", Version: "1.0.0"}, opts)
	switch mode {
	case "many":
		n, _ := strconv.Atoi(os.Getenv("TOOLGATE_HELPER_TOOLS"))
		for i := range n {
			server.AddTool(&mcp.Tool{
				Name:        fmt.Sprintf("tool_%03d", i),
				Description: fmt.Sprintf("Tool number %d.", i),
				InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
			}, nop)
		}
	case "notools":
		server.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	default:
		addDefaultTools(server)
	}
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				switch mode {
				case "listerror":
					return nil, errors.New("the tool catalog database is unavailable")
				case "dieonlist":
					fmt.Fprintln(os.Stderr, "panic: catalog corrupted")
					os.Exit(2)
				}
			}
			return next(ctx, method, req)
		}
	})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
}

func nop(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

func addDefaultTools(server *mcp.Server) {
	env := os.Environ()
	sort.Strings(env)
	cwd, _ := os.Getwd()
	object := json.RawMessage(`{"type":"object"}`)
	yes, no := true, false
	server.AddTool(&mcp.Tool{Name: "env", Description: strings.Join(env, "\n"), InputSchema: object}, nop)
	server.AddTool(&mcp.Tool{Name: "cwd", Description: cwd, InputSchema: object}, nop)
	server.AddTool(&mcp.Tool{
		Name:         "read_thing",
		Title:        "Read a thing",
		Description:  "Reads a thing.",
		InputSchema:  json.RawMessage(`{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"body":{"type":"string"}}}`),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, nop)
	server.AddTool(&mcp.Tool{
		Name:        "delete_thing",
		Description: "Deletes a thing.",
		InputSchema: json.RawMessage(`{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}`),
		Annotations: &mcp.ToolAnnotations{Title: "Delete a thing", DestructiveHint: &yes, IdempotentHint: true},
	}, nop)
}

// spawnSleepers starts two grandchildren that outlive nothing on their own:
// one stays in the process group, one leaves it with setsid.
func spawnSleepers() {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	for _, attr := range []*syscall.SysProcAttr{nil, {Setsid: true}} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), "TOOLGATE_HELPER_MODE=sleep", "TOOLGATE_HELPER_SPAWN=0")
		cmd.SysProcAttr = attr
		if err := cmd.Start(); err != nil {
			panic(err)
		}
	}
}
