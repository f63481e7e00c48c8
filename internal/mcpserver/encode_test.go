package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAppendResultAsMarshal holds appendResult to json.Marshal's bytes,
// and checks which results it writes itself.
func TestAppendResultAsMarshal(t *testing.T) {
	text := func(s string) *mcp.TextContent { return &mcp.TextContent{Text: s} }
	decoded := func(raw string) *mcp.CallToolResult {
		var res mcp.CallToolResult
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			t.Fatal(err)
		}
		return &res
	}
	for _, tc := range []struct {
		name  string
		res   *mcp.CallToolResult
		plain bool
	}{
		{"empty", &mcp.CallToolResult{Content: []mcp.Content{}}, true},
		{"text", &mcp.CallToolResult{Content: []mcp.Content{text("hi")}}, true},
		{"escapes", &mcp.CallToolResult{Content: []mcp.Content{text("<a href=\"x\">&</a>\n\t\x01\x7f \u2028\u2029 é 😀 \xff\\"), text("")}}, true},
		{"error", &mcp.CallToolResult{Content: []mcp.Content{text("failed")}, IsError: true}, true},
		{"structured", &mcp.CallToolResult{Content: []mcp.Content{text("x")},
			StructuredContent: json.RawMessage(" {\"b\" : [1, 2.50, 1e400],\n \"a\":\"<&>\u2028\", \"big\": 12345678901234567890} ")}, true},
		{"structured scalar", &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(`7`)}, true},
		{"structured map", &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"z": 1, "a": "<"}}, false},
		{"meta", &mcp.CallToolResult{Content: []mcp.Content{}, Meta: mcp.Meta{"k": "v"}}, false},
		{"annotated", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}}, false},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}, false},
		{"result type", decoded(`{"content":[{"type":"text","text":"done"}],"resultType":"complete"}`), false},
		{"request state", &mcp.CallToolResult{Content: []mcp.Content{}, RequestState: "s"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := json.Marshal(tc.res)
			got, err := appendResult([]byte("prefix:"), tc.res)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
			}
			if string(got) != "prefix:"+string(want) {
				t.Fatalf("appendResult wrote\n%s\njson.Marshal writes\n%s", got, want)
			}
			if plainResult(tc.res) != tc.plain {
				t.Fatalf("written here: %v, want %v", plainResult(tc.res), tc.plain)
			}
		})
	}
	if resultTypeField < 0 {
		t.Fatal("CallToolResult has no resultType field: every result goes through json.Marshal")
	}
}

func BenchmarkAppendResult(b *testing.B) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "toolgate bench echo"}},
		StructuredContent: json.RawMessage(`{"echo":"toolgate bench echo"}`)}
	b.Run("appendResult", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			if _, err := appendResult(buf[:0], res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(res); err != nil {
				b.Fatal(err)
			}
		}
	})
}
