package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Structured content an upstream indented is measured against the result
// limit, and passed on, as the SDK's encoder would write it: compact.
// Content within the limit as sent passes on as sent.
func TestShapeMCPMeasuresStructuredContentCompact(t *testing.T) {
	x := &exec{g: &Gateway{opts: Options{MaxResultBytes: 64}}}
	shaped := func(structured string) *mcp.CallToolResult {
		return x.shapeMCP(&mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(structured)})
	}
	indented := "{\n" + strings.Repeat(" ", 60) + "\"a\": [1, 2, 3],\n    \"b\": \"x\"\n}"
	if got, ok := shaped(indented).StructuredContent.(json.RawMessage); !ok || string(got) != `{"a":[1,2,3],"b":"x"}` {
		t.Errorf("indented, %d bytes as sent: %s", len(indented), got)
	}
	if got, ok := shaped(`{"a": 1}`).StructuredContent.(json.RawMessage); !ok || string(got) != `{"a": 1}` {
		t.Errorf("within the limit: %s", got)
	}
	res := shaped(`{"a":"` + strings.Repeat("y", 100) + `"}`)
	if res.StructuredContent != nil || len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "left out") {
		t.Errorf("over the limit compact: %+v", res)
	}
}
