package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/search"
)

var errUnfinished = errors.New("the gateway is not finished yet")

// Search finds tools the caller's workspace sees.
func (g *Gateway) Search(ctx context.Context, c Caller, text string, limit int, sourceID string) ([]search.Hit, error) {
	return nil, errUnfinished
}

// Describe finds one tool by path or alias.
func (g *Gateway) Describe(ctx context.Context, c Caller, path string) (Tool, error) {
	return Tool{}, errUnfinished
}

// List is every tool of the enabled sources the workspace sees, by path.
func (g *Gateway) List(ctx context.Context, c Caller) ([]Tool, error) {
	return nil, errUnfinished
}

// RegistryVersion changes whenever the set of tools a workspace sees changes.
func (g *Gateway) RegistryVersion(ctx context.Context, orgID, workspaceID int64) (string, error) {
	return "", errUnfinished
}

// Call runs one tool call.
func (g *Gateway) Call(ctx context.Context, c Caller, path string, args json.RawMessage, progress Progress) (*mcp.CallToolResult, error) {
	return nil, errUnfinished
}

// RedactArguments replaces the values of secret-looking keys.
func RedactArguments(args json.RawMessage) json.RawMessage { return args }
