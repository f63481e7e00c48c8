package mcppool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/jsonscan"
)

// reader reads one answer of the lean path: an application/json body or a
// stream of server-sent events. Pooled, so a call allocates no buffers.
type reader struct {
	br   *bufio.Reader
	src  body   // what br reads
	long []byte // a line longer than br's buffer
	data []byte // the current event's data, or the JSON body
}

// body is an answer's body that remembers reaching its end: a body read to
// its end gives its connection back for the next call, and bufio keeps an
// end it has seen to itself until the buffer is empty.
type body struct {
	r   io.Reader
	eof bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// keptBuffer is the largest buffer a pooled reader keeps; one huge answer
// must not pin its memory.
const keptBuffer = 1 << 20

var readers = sync.Pool{New: func() any { return &reader{br: bufio.NewReaderSize(nil, 8<<10)} }}

func getReader(r io.Reader) *reader {
	rd := readers.Get().(*reader)
	rd.src = body{r: r}
	rd.br.Reset(&rd.src)
	return rd
}

func putReader(rd *reader) {
	rd.br.Reset(nil)
	rd.src = body{}
	if cap(rd.long) > keptBuffer {
		rd.long = nil
	}
	if cap(rd.data) > keptBuffer {
		rd.data = nil
	}
	readers.Put(rd)
}

var errTooLarge = errors.New("too large")

// single reads a JSON body holding the response to call id.
func (rd *reader) single(id int64) (*mcp.CallToolResult, error) {
	data, err := rd.all(maxJSONAnswer)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("the server's answer to tools/call exceeds %d MiB", maxJSONAnswer>>20)
	}
	if err != nil {
		return nil, fmt.Errorf("read the server's answer to tools/call: %w", err)
	}
	var m message
	if err := m.decode(data); err != nil {
		return nil, err
	}
	if m.Method != "" || !m.isResponseTo(id) {
		return nil, errors.New("the server's JSON answer to tools/call is not its response")
	}
	return m.toolResult(data)
}

// all reads the rest of the body, at most limit bytes.
func (rd *reader) all(limit int) ([]byte, error) {
	buf := rd.data[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.br.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		rd.data = buf
		if len(buf) > limit {
			return nil, errTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// event returns the data of the next event that carries a message: named
// "message" or not named, with data. Reading ends with io.EOF. Like the
// SDK's reader it trims the space around each data line and refuses a line
// without a colon and an event over [maxEvent] bytes.
func (rd *reader) event() ([]byte, error) {
	rd.data = rd.data[:0]
	var (
		size           int
		hasData, other bool
	)
	for {
		line, err := rd.line(maxEvent - size)
		if errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("an event of the server's tools/call stream exceeds %d MiB", maxEvent>>20)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read the server's tools/call stream: %w", err)
		}
		eof := err != nil
		size += len(line)
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData && !other && len(rd.data) > 0 {
				return rd.data, nil
			}
			if eof {
				return nil, io.EOF
			}
			rd.data, size, hasData, other = rd.data[:0], 0, false, false
			continue
		}
		field, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			return nil, fmt.Errorf("the server's tools/call stream has a malformed line %.40q", line)
		}
		switch string(field) {
		case "data":
			if hasData {
				rd.data = append(rd.data, '\n')
			}
			rd.data = append(rd.data, bytes.TrimSpace(value)...)
			hasData = true
		case "event":
			name := bytes.TrimSpace(value)
			other = len(name) > 0 && string(name) != "message"
		}
		if eof {
			// The stream ended inside an event: it still counts, as in the SDK.
			if hasData && !other && len(rd.data) > 0 {
				return rd.data, nil
			}
			return nil, io.EOF
		}
	}
}

// line returns the next line with its end, at most budget bytes of it; at
// the end of the stream, what is left with io.EOF.
func (rd *reader) line(budget int) ([]byte, error) {
	line, err := rd.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		rd.long = append(rd.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(rd.long) <= budget {
			line, err = rd.br.ReadSlice('\n')
			rd.long = append(rd.long, line...)
		}
		line = rd.long
	}
	if len(line) > budget {
		return nil, errTooLarge
	}
	return line, err
}

// ended reports whether the body has been read to its end.
func (rd *reader) ended() bool { return rd.src.eof }

// drain reads the end of the answer after the call's response, so the
// connection carries the next call, then closes rc. A server that holds
// the stream open longer than grace, or sends more than a little after its
// response, loses the connection instead.
func (rd *reader) drain(rc io.ReadCloser, grace time.Duration) {
	t := time.AfterFunc(grace, func() { rc.Close() })
	_, _ = io.Copy(io.Discard, io.LimitReader(rd.br, maxErrorBody))
	t.Stop()
	rc.Close()
}

// message is one JSON-RPC message of an answer: the response to the call,
// or a notification or request of the server.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  *wireResult     `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
	// plain is the result of a response read by plainResponse.
	plain *mcp.CallToolResult
}

func (m *message) decode(data []byte) error {
	*m = message{}
	if m.plainResponse(data) {
		return nil
	}
	if err := json.Unmarshal(data, m); err != nil {
		return fmt.Errorf("decode the server's message: %w", err)
	}
	if m.JSONRPC != "2.0" {
		return fmt.Errorf("the server's message is not JSON-RPC 2.0 (jsonrpc %q)", m.JSONRPC)
	}
	return nil
}

// isResponseTo reports whether m answers call id.
func (m *message) isResponseTo(id int64) bool {
	var buf [20]byte
	if bytes.Equal(m.ID, strconv.AppendInt(buf[:0], id, 10)) {
		return true
	}
	f, err := strconv.ParseFloat(string(m.ID), 64) // 1.0e6 is the same id
	return err == nil && f == float64(id)
}

// toolResult is the response's result, or the error it carries as the SDK
// reports it. data is the whole message, for results only the SDK decodes.
func (m *message) toolResult(data []byte) (*mcp.CallToolResult, error) {
	if m.plain != nil {
		return m.plain, nil
	}
	if m.Error != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", m.Error)
	}
	if m.Result == nil {
		return nil, errors.New("the server's response to tools/call has neither a result nor an error")
	}
	if res, ok := m.Result.sdk(); ok {
		return res, nil
	}
	var env struct {
		Result *mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	return env.Result, nil
}

// plainResponse reads the response most tools send, a result of text
// blocks with structured content, by finding its members rather than
// decoding it through reflection, which cost more CPU than anything else
// in reading the answer. It gives the result decode would, except that
// structured content is kept as sent ([json.RawMessage]): its numbers keep
// their precision and its keys their order. Anything else, from an
// unknown member to a block that is not plain text, it leaves to decode,
// reporting false. data is a pooled buffer: what m keeps is copied.
func (m *message) plainResponse(data []byte) bool {
	var v [3][]byte
	if !json.Valid(data) || !jsonscan.Fields(data, responseKeys, v[:]) {
		return false
	}
	version, id, result := v[0], v[1], v[2]
	if string(version) != `"2.0"` || id == nil || result == nil || string(result) == "null" {
		return false // a null result is decode's to refuse
	}
	res, ok := plainResult(result)
	if !ok {
		return false
	}
	m.JSONRPC, m.ID, m.plain = "2.0", bytes.Clone(id), res
	return true
}

// The members plainResponse reads, at each level of a response.
var (
	responseKeys = []string{"jsonrpc", "id", "result"}
	resultKeys   = []string{"content", "structuredContent", "isError"}
	textKeys     = []string{"type", "text"}
)

// plainResult is a tools/call result of text blocks, structured content
// and the error flag, and nothing else.
func plainResult(raw []byte) (*mcp.CallToolResult, bool) {
	var v [3][]byte
	if !jsonscan.Fields(raw, resultKeys, v[:]) {
		return nil, false
	}
	content, structured, isError := v[0], v[1], v[2]
	res := &mcp.CallToolResult{Content: []mcp.Content{}} // never nil, as the SDK's
	switch string(isError) {
	case "", "null", "false":
	case "true":
		res.IsError = true
	default:
		return nil, false
	}
	if structured != nil && string(structured) != "null" {
		if !utf8.Valid(structured) || surrogateEscape(structured) {
			return nil, false // decode writes U+FFFD for these
		}
		res.StructuredContent = json.RawMessage(bytes.Clone(structured))
	}
	if content == nil || string(content) == "null" {
		return res, true
	}
	ok := jsonscan.Elements(content, func(raw []byte) bool {
		var block [2][]byte
		if !jsonscan.Fields(raw, textKeys, block[:]) || string(block[0]) != `"text"` {
			return false
		}
		text := &mcp.TextContent{}
		if block[1] != nil {
			var ok bool
			if text.Text, ok = jsonscan.String(block[1]); !ok {
				return false
			}
		}
		res.Content = append(res.Content, text)
		return true
	})
	return res, ok
}

// wireResult is a CallToolResult as sent, decoded with encoding/json:
// [mcp.CallToolResult.UnmarshalJSON] allocates a 32 KiB decoder each time.
// The fields are those of the SDK's own wire form, so the SDK's types come
// out the same; a result with anything else falls back to the SDK.
type wireResult struct {
	Meta              mcp.Meta      `json:"_meta,omitempty"`
	Content           []wireContent `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError,omitempty"`
	// Set only in multi-round results, which the SDK keeps in unexported
	// fields.
	ResultType    string          `json:"resultType,omitempty"`
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	RequestState  string          `json:"requestState,omitempty"`
}

// sdk converts w as the SDK's decoder does, reporting false for what only
// the SDK can decode.
func (w *wireResult) sdk() (*mcp.CallToolResult, bool) {
	if w.ResultType != "" || len(w.InputRequests) > 0 || w.RequestState != "" {
		return nil, false
	}
	content := make([]mcp.Content, 0, len(w.Content)) // never nil, as the SDK's
	for i := range w.Content {
		c := w.Content[i].sdk()
		if c == nil {
			return nil, false
		}
		content = append(content, c)
	}
	return &mcp.CallToolResult{Meta: w.Meta, Content: content, StructuredContent: w.StructuredContent, IsError: w.IsError}, true
}

// wireContent is a content block of the kinds a tool result holds, with
// the SDK's field names.
type wireContent struct {
	Type        string                `json:"type"`
	Text        string                `json:"text,omitempty"`
	MIMEType    string                `json:"mimeType,omitempty"`
	Data        []byte                `json:"data,omitempty"`
	Resource    *mcp.ResourceContents `json:"resource,omitempty"`
	URI         string                `json:"uri,omitempty"`
	Name        string                `json:"name,omitempty"`
	Title       string                `json:"title,omitempty"`
	Description string                `json:"description,omitempty"`
	Size        *int64                `json:"size,omitempty"`
	Meta        mcp.Meta              `json:"_meta,omitempty"`
	Annotations *mcp.Annotations      `json:"annotations,omitempty"`
	Icons       []mcp.Icon            `json:"icons,omitempty"`
}

// sdk is the SDK's content for w, or nil for a kind left to the SDK
// (tool_use, tool_result, unknown kinds and null blocks).
func (w *wireContent) sdk() mcp.Content {
	switch w.Type {
	case "text":
		return &mcp.TextContent{Text: w.Text, Meta: w.Meta, Annotations: w.Annotations}
	case "image":
		return &mcp.ImageContent{Data: w.Data, MIMEType: w.MIMEType, Meta: w.Meta, Annotations: w.Annotations}
	case "audio":
		return &mcp.AudioContent{Data: w.Data, MIMEType: w.MIMEType, Meta: w.Meta, Annotations: w.Annotations}
	case "resource_link":
		return &mcp.ResourceLink{URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description,
			MIMEType: w.MIMEType, Size: w.Size, Meta: w.Meta, Annotations: w.Annotations, Icons: w.Icons}
	case "resource":
		return &mcp.EmbeddedResource{Resource: w.Resource, Meta: w.Meta, Annotations: w.Annotations}
	}
	return nil
}

// surrogateEscape reports whether raw may hold a \u escape of a UTF-16
// surrogate (\ud800 to \udfff), which decoding turns into U+FFFD when it
// stands alone; an escaped backslash before a "u" counts too, which only
// sends such an answer the decoding way.
func surrogateEscape(raw []byte) bool {
	for i := 0; i+3 < len(raw); i++ {
		// |0x20 folds A-F to a-f and leaves digits as they are.
		if raw[i] == '\\' && raw[i+1] == 'u' && raw[i+2]|0x20 == 'd' && bytes.IndexByte([]byte("89abcdef"), raw[i+3]|0x20) >= 0 {
			return true
		}
	}
	return false
}
