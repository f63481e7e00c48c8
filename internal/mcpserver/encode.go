package mcpserver

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// appendResult appends res as JSON, byte for byte what json.Marshal (and
// so the SDK) writes for it. The usual result, text blocks with structured
// content kept as sent, is written here: the SDK's MarshalJSON goes
// through two wire structs and marshals each block on its own, and
// encoding/json validates every nested MarshalJSON's output again. Any
// other result goes through json.Marshal.
func appendResult(dst []byte, res *mcp.CallToolResult) ([]byte, error) {
	if !plainResult(res) {
		b, err := json.Marshal(res)
		return append(dst, b...), err
	}
	dst = append(dst, `{"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		var err error
		if dst, err = appendString(dst, c.(*mcp.TextContent).Text); err != nil {
			return dst, err
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if raw, _ := res.StructuredContent.(json.RawMessage); raw != nil {
		dst = append(dst, `,"structuredContent":`...)
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return dst, err
		}
		var escaped bytes.Buffer
		json.HTMLEscape(&escaped, compact.Bytes()) // as json.Marshal does to a RawMessage
		dst = append(dst, escaped.Bytes()...)
	}
	if res.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}'), nil
}

// plainResult reports whether appendResult writes res itself: no _meta,
// no multi-round fields, only text blocks without _meta or annotations,
// and structured content absent or raw JSON.
func plainResult(res *mcp.CallToolResult) bool {
	if res.Meta != nil || res.InputRequests != nil || res.RequestState != "" || res.Content == nil || resultTypeOf(res) != "" {
		return false
	}
	switch v := res.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		if v == nil {
			return false // marshals as null
		}
	default:
		return false
	}
	for _, c := range res.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
			return false
		}
	}
	return true
}

// resultTypeField is the index of CallToolResult's unexported resultType,
// which the SDK marshals and offers no getter for; -1 if the SDK has none.
var resultTypeField = func() int {
	f, ok := reflect.TypeFor[mcp.CallToolResult]().FieldByName("resultType")
	if !ok || f.Type.Kind() != reflect.String || len(f.Index) != 1 {
		return -1
	}
	return f.Index[0]
}()

func resultTypeOf(res *mcp.CallToolResult) string {
	if resultTypeField < 0 {
		return "?" // unknown to this code: let json.Marshal decide
	}
	return reflect.ValueOf(res).Elem().Field(resultTypeField).String()
}

// appendString appends s as encoding/json writes a string.
func appendString(dst []byte, s string) ([]byte, error) {
	b, err := json.Marshal(s)
	return append(dst, b...), err
}
