package mcppool

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultDecodesAsSDK decodes results the lean way and the SDK's way
// ([mcp.CallToolResult.UnmarshalJSON]) and wants the same.
func TestResultDecodesAsSDK(t *testing.T) {
	for _, raw := range []string{
		`{"content":[]}`,
		`{}`,
		`{"content":null}`,
		`{"content":[{"type":"text","text":"hi \u00e9 \ud83d\ude00 <&>","_meta":{"a":[1,"b",null,{"c":true}]},"annotations":{"audience":["user","assistant"],"priority":0.25,"lastModified":"2025-01-12T15:00:58Z"}}]}`,
		`{"content":[{"type":"text"}]}`,
		`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav","annotations":{"priority":1}}]}`,
		`{"content":[{"type":"image","data":"","mimeType":"image/png"},{"type":"image","mimeType":"image/gif"}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///a.txt","name":"a","title":"A","description":"d","mimeType":"text/plain","size":12,"icons":[{"src":"data:image/png;base64,AA==","mimeType":"image/png","sizes":["16x16"],"theme":"dark"}],"_meta":{"k":1}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"test://t","mimeType":"text/plain","text":"body","_meta":{"m":"v"}}},{"type":"resource","resource":{"uri":"test://b","blob":"AAEC/w=="}}]}`,
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"temperature":22.5,"list":[1,2,{"x":null}]},"isError":false,"_meta":{"trace":"t"}}`,
		`{"content":[{"type":"text","text":"bad"}],"isError":true}`,
		`{"content":[],"structuredContent":[1,"two"]}`,
		`{"content":[],"structuredContent":7}`,
		`{"content":[],"structuredContent":null}`,
		`{"content":[{"type":"text","text":"extra fields","id":"x","name":"n","uri":"u"}],"unknownField":{"deep":[1]}}`,
		`{"content":[{"type":"text","text":"a \"quoted\" \\ line\nbreak \u00e9"},{"text":"second","type":"text"}],"isError":null}`,
		`{"isError":true,"structuredContent":{"b":1,"a":{"z":[true,false,null]}},"content":[{"type":"text","text":""}]}`,
		`{"content":[{"type":"text","text":"twice","text":"again"}]}`,
		`{"content":[{"type":"text","text":"x"}],"isError":"yes"}`,
		// Left to the SDK.
		`{"content":[{"type":"tool_use","id":"t1","name":"calc","input":{"x":1}}]}`,
		`{"content":[{"type":"tool_result","toolUseId":"t1","content":[{"type":"text","text":"2"}]}]}`,
		`{"content":[{"type":"text","text":"done"}],"resultType":"complete"}`,
		// Errors on both paths.
		`{"content":[{"type":"video","data":"AA=="}]}`,
		`{"content":[null]}`,
		`{"content":[{"type":"image","data":"not base64!"}]}`,
		`{"content":{"type":"text","text":"not a list"}}`,
	} {
		var want mcp.CallToolResult
		wantErr := json.Unmarshal([]byte(raw), &want)
		data := []byte(`{"jsonrpc":"2.0","id":1,"result":` + raw + `}`)
		var m message
		got, gotErr := m.decode(data), error(nil)
		var res *mcp.CallToolResult
		if got == nil {
			res, gotErr = m.toolResult(data)
		} else {
			gotErr = got
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s:\nsdk error  %v\nlean error %v", raw, wantErr, gotErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if raw, ok := res.StructuredContent.(json.RawMessage); ok {
			// Kept as sent; it decodes to what the SDK holds.
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Errorf("%s: structured content %s: %v", raw, raw, err)
			}
			res.StructuredContent = v
		}
		if diff := cmp.Diff(&want, res, cmp.AllowUnexported(mcp.CallToolResult{})); diff != "" {
			t.Errorf("%s (-sdk +lean):\n%s", raw, diff)
		}
	}
}

// Structured content that decoding would change (a lone surrogate escape
// becomes U+FFFD) reaches the agent as the SDK's path sends it. (Other
// escapes pass on as written, the same JSON as the SDK sends.)
func TestStructuredContentSentAsSDK(t *testing.T) {
	for _, sc := range []string{`{"a":"\ud800"}`, `{"a":"x \uDFFF"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\\ud800"}`, `{"a":"\udc00 \\ud800"}`} {
		raw := `{"content":[],"structuredContent":` + sc + `}`
		var want mcp.CallToolResult
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want.StructuredContent)
		data := []byte(`{"jsonrpc":"2.0","id":1,"result":` + raw + `}`)
		var m message
		if err := m.decode(data); err != nil {
			t.Fatal(err)
		}
		res, err := m.toolResult(data)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(res.StructuredContent); string(got) != string(wantJSON) {
			t.Errorf("%s: sent %s, the SDK's path sends %s", sc, got, wantJSON)
		}
	}
}

// TestPlainResponse checks which answers are read without reflection:
// the usual ones are, and anything else falls back to decoding.
func TestPlainResponse(t *testing.T) {
	for raw, plain := range map[string]bool{
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"echo":"hi"}}}`: true,
		` { "result" : { "content" : [ ] } , "id" : "s-1" , "jsonrpc" : "2.0" } `:                                       true,
		`{"jsonrpc":"2.0","id":3,"result":{"isError":true,"content":[{"type":"text","text":"failed: \u00e9"}]}}`:        true,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}`:         false,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi","_meta":{}}]}}`:                        false,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[],"_meta":{"k":1}}}`:                                              false,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`:                                              false,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`:               false,
		`{"jsonrpc":"1.0","id":3,"result":{"content":[]}}`:                                                              false,
		`{"jsonrpc":"2.0","id":3,"id":4,"result":{"content":[]}}`:                                                       false,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[]}`:                                                               false,
		`{"jsonrpc":"2.0","id":3,"result":null}`:                                                                        false,
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[],\"structuredContent\":{\"a\":\"\xff\"}}}":             false,
	} {
		var m message
		if got := m.plainResponse([]byte(raw)); got != plain {
			t.Errorf("plainResponse(%s) = %v, want %v", raw, got, plain)
		}
	}
	// The pooled buffer is reused for the next answer: nothing read from
	// it may alias it.
	data := []byte(`{"jsonrpc":"2.0","id":77,"result":{"content":[{"type":"text","text":"kept"}],"structuredContent":{"v":1}}}`)
	var m message
	if !m.plainResponse(data) {
		t.Fatal("not read as plain")
	}
	for i := range data {
		data[i] = 'x'
	}
	if string(m.ID) != "77" || m.plain.Content[0].(*mcp.TextContent).Text != "kept" || string(m.plain.StructuredContent.(json.RawMessage)) != `{"v":1}` {
		t.Fatalf("the message changed with its buffer: %s %+v", m.ID, m.plain)
	}
}

func TestResponseIDs(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{{"1048577", true}, {"1048577.0", true}, {"1.048577e6", true}, {"1048578", false}, {`"1048577"`, false}, {"null", false}} {
		m := message{ID: json.RawMessage(c.id)}
		if got := m.isResponseTo(1048577); got != c.want {
			t.Errorf("id %s: %v", c.id, got)
		}
	}
}

// TestEventReader reads streams as the SDK's reader does.
func TestEventReader(t *testing.T) {
	long := strings.Repeat("x", 20_000)
	for _, c := range []struct {
		name, stream string
		want         []string
		err          string
	}{
		{"plain", "data: a\n\ndata: b\n\n", []string{"a", "b"}, ""},
		{"crlf and names", "event: message\r\nid: 1\r\ndata: a\r\n\r\nevent: ping\ndata: skipped\n\nevent:message\ndata:b\n\n", []string{"a", "b"}, ""},
		{"joined lines", "data: {\"a\":\ndata: 1}\n\n", []string{"{\"a\":\n1}"}, ""},
		{"comments and empty events", ": hi\n\nid: 7\n\ndata:\n\ndata: a\n\n", []string{"a"}, ""},
		{"unterminated last event", "data: a\n\ndata: b", []string{"a", "b"}, ""},
		{"long line", "data: " + long + "\n\n", []string{long}, ""},
		{"malformed", "data: a\n\nnot a field\n\n", []string{"a"}, "malformed line"},
	} {
		rd := getReader(strings.NewReader(c.stream))
		var got []string
		var err error
		for {
			var data []byte
			data, err = rd.event()
			if err != nil {
				break
			}
			got = append(got, string(data))
		}
		putReader(rd)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
		if c.err == "" && !errors.Is(err, io.EOF) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
}

// TestEventReaderBounded refuses an event over the SDK's limit without
// holding more of it than that.
func TestEventReaderBounded(t *testing.T) {
	rd := &reader{br: bufio.NewReaderSize(nil, 8<<10)}
	rd.br.Reset(io.MultiReader(strings.NewReader("data: "), endless{}))
	_, err := rd.event()
	if err == nil || !strings.Contains(err.Error(), "exceeds 16 MiB") {
		t.Fatalf("err = %v", err)
	}
	if cap(rd.long) > 2*maxEvent {
		t.Errorf("held %d bytes", cap(rd.long))
	}
}

// endless is an answer that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
