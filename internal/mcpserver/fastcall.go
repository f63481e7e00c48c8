package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/jsonscan"
)

// The fast path answers the request agents send most, one tools/call on a
// live session, without the SDK's JSON-RPC machinery: the SDK spends more
// CPU per call on its own streams, goroutines and 32 KiB decoder buffers
// than the whole rest of the call. It decodes the request with the
// standard library, runs the gateway's pipeline, and answers
// application/json, which Streamable HTTP lets a server choose for any
// request. The result is the same value the SDK path returns, marshalled
// the same way.
//
// It takes only requests it can answer exactly as the SDK would, and
// hands everything else to the session's SDK transport untouched:
// batches, other methods, search_tools and describe_tool, get_approval,
// a resume (approval_id), a progress token (progress needs a stream), a
// client that does not accept application/json, the 2026-07-28 protocol's
// per-request _meta or Mcp-Method headers, unknown fields, and a call a
// person must approve (waiting sends progress and may elicit; the gateway
// says so through [gateway.ErrWouldHold] before it holds or records
// anything).

// maxDepth is the deepest nesting the SDK's decoder accepts; it refuses
// a deeper request, so the fast path leaves one to it.
const maxDepth = 1000

// fastParams are tools/call's params as the fast path reads them.
type fastParams struct {
	Name      string
	Arguments json.RawMessage
}

// cancelParams are notifications/cancelled's params.
type cancelParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Reason    string          `json:"reason"`
}

// inflight are a session's fast-path calls by request id, so that a
// notifications/cancelled can stop one and a duplicate id is refused.
type inflight struct {
	mu    sync.Mutex
	calls map[string]context.CancelFunc
}

func (f *inflight) add(id string, cancel context.CancelFunc) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]context.CancelFunc{}
	}
	if _, dup := f.calls[id]; dup {
		return false
	}
	f.calls[id] = cancel
	return true
}

func (f *inflight) done(id string) {
	f.mu.Lock()
	delete(f.calls, id)
	f.mu.Unlock()
}

// cancel stops the call with id; false when no fast-path call has it.
func (f *inflight) cancel(id string) bool {
	f.mu.Lock()
	cancel, ok := f.calls[id]
	f.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// fastEligible reports whether the HTTP side of a session's POST allows
// a JSON answer the SDK would not have to see.
func fastEligible(r *http.Request) bool {
	if r.Header.Get("Last-Event-ID") != "" || !acceptsJSON(r.Header.Values("Accept")) {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= "2026-07-28" {
		return false
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		return false
	}
	for name := range r.Header {
		// Mcp-Method, Mcp-Name and Mcp-Param-* are checked against the body
		// by the SDK.
		if name == "Mcp-Method" || name == "Mcp-Name" || strings.HasPrefix(name, "Mcp-Param-") {
			return false
		}
	}
	return true
}

// acceptsJSON reports whether an Accept header allows application/json;
// none at all does.
func acceptsJSON(values []string) bool {
	if len(values) == 0 {
		return true
	}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*", "*/*":
				return true
			}
		}
	}
	return false
}

// fast serves a session's POST through the fast path when it can, and
// reports whether it did; otherwise r is as it came, body included, for
// the SDK.
func (s *sessions) fast(w http.ResponseWriter, r *http.Request, c caller) bool {
	id := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost || id == "" || !fastEligible(r) {
		return false
	}
	ls, ok := s.lookup(w, r, id, c)
	if !ok {
		return true // answered: not found, or the database is unreachable
	}
	body, ok := readBody(w, r)
	if !ok {
		return true
	}
	if s.fastCall(w, r, ls, c, body) {
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return false
}

// fastCall serves body, the POST of session ls by caller c, when it is a
// request the fast path takes, and reports whether it did; when it did
// not, nothing was written and the SDK serves the request.
func (s *sessions) fastCall(w http.ResponseWriter, r *http.Request, ls *liveSession, c caller, body []byte) bool {
	body = bytes.Trim(body, " \t\r\n") // JSON's whitespace, which the SDK's decoder skips
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) || jsonscan.Depth(body) > maxDepth {
		return false // empty, a batch, not JSON or too deep: the SDK answers
	}
	req, ok := parseFastRequest(body)
	if !ok || string(req.jsonrpc) != `"2.0"` {
		return false
	}
	method, _ := jsonscan.String(req.method)
	if method == "notifications/cancelled" && req.id == nil {
		return s.fastCancel(w, ls, req.params)
	}
	rawID := json.RawMessage(req.id)
	id, ok := plainID(rawID)
	if !ok || method != "tools/call" {
		return false
	}
	p, ok := parseFastParams(req.params)
	if !ok {
		return false
	}
	path, args, refusal, ok := s.h.fastTarget(ls, p)
	if !ok {
		return false
	}

	// As on the SDK path, a call runs to its end when the client goes
	// away (an upstream write is not cut off halfway); only
	// notifications/cancelled stops it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	if !ls.inflight.add(id, cancel) {
		writeRPCError(w, http.StatusBadRequest, rawID, -32600, "duplicate in-flight request ID "+string(rawID))
		return true
	}
	defer ls.inflight.done(id)

	res := refusal
	if res == nil {
		gc := c.gatewayCaller()
		gc.NoHold = true
		var err error
		res, err = s.h.opts.Gateway.Call(ctx, gc, path, args, nil)
		if errors.Is(err, gateway.ErrWouldHold) {
			return false
		}
		res = s.h.callOutcome(path, res, err)
	}
	if res.Content == nil {
		res.Content = []mcp.Content{} // as the SDK: never "null"
	}
	out := make([]byte, 0, 512)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, rawID...)
	out = append(out, `,"result":`...)
	out, err := appendResult(out, res)
	if err != nil {
		s.h.log.Error("mcp: encode result", "tool", path, "error", err)
		writeRPCError(w, http.StatusOK, rawID, -32603, "toolgate could not encode the tool's result")
		return true
	}
	out = append(out, '}')
	writeJSON(w, http.StatusOK, out)
	return true
}

// fastTarget is the tool a fast-path tools/call names: the registry path
// and arguments to run, or a refusal to answer as the SDK handler would;
// ok false hands the request to the SDK.
func (h *Handler) fastTarget(ls *liveSession, p fastParams) (path string, args json.RawMessage, refusal *mcp.CallToolResult, ok bool) {
	switch ls.row.Mode {
	case ModeDirect:
		byName := h.direct.tools(ls.row.WorkspaceID)
		if byName == nil {
			return "", nil, nil, false
		}
		t, known := byName[p.Name]
		if !known {
			return "", nil, nil, false // get_approval, or unknown: the SDK answers
		}
		return t.Path, p.Arguments, nil, true
	default:
		if p.Name != "call_tool" {
			return "", nil, nil, false
		}
		in, bad := fastCallTool(p.Arguments)
		if bad != nil {
			return "", nil, bad, true
		}
		if in.ApprovalID != "" {
			return "", nil, nil, false // a resume may wait and stream
		}
		return in.Path, in.Arguments, nil, true
	}
}

// fastCancel stops a fast-path call a notifications/cancelled names; one
// it does not know goes to the SDK, which may be running it.
func (s *sessions) fastCancel(w http.ResponseWriter, ls *liveSession, params json.RawMessage) bool {
	var p cancelParams
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	id, ok := plainID(p.RequestID)
	if !ok || !ls.inflight.cancel(id) {
		return false
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}

// fastRequest is a JSON-RPC message's members as written, each nil when
// absent; they alias the request body.
type fastRequest struct {
	jsonrpc, id, method, params []byte
}

// The members the fast path reads, at each level of a tools/call.
var (
	requestKeys  = []string{"jsonrpc", "id", "method", "params"}
	paramsKeys   = []string{"name", "arguments", "_meta"}
	callToolKeys = []string{"path", "arguments", "approval_id"}
)

// parseFastRequest finds the members of a JSON-RPC message, which must be
// valid JSON. ok is false for anything the fast path leaves to the SDK: a
// key it does not know, a key spelled in another case (encoding/json would
// match it, the SDK does not) or with escapes, and a repeated key.
func parseFastRequest(body []byte) (fastRequest, bool) {
	var v [4][]byte
	ok := jsonscan.Fields(body, requestKeys, v[:])
	return fastRequest{jsonrpc: v[0], id: v[1], method: v[2], params: v[3]}, ok
}

// parseFastParams reads tools/call's params, from a body already checked
// valid; ok is false when they ask something of the transport (a progress
// token, the 2026-07-28 protocol's fields) or are not what the fast path
// reads exactly.
func parseFastParams(raw []byte) (p fastParams, ok bool) {
	var v [3][]byte
	if raw == nil || !jsonscan.Fields(raw, paramsKeys, v[:]) {
		return p, false
	}
	name, args, meta := v[0], v[1], v[2]
	if name != nil {
		if p.Name, ok = jsonscan.String(name); !ok {
			return p, false
		}
	}
	if meta != nil && !plainMeta(meta) {
		return p, false
	}
	p.Arguments = args
	return p, true
}

// fastCallTool reads call_tool's arguments as parseCallTool does, without
// decoding them when they are plainly written; anything else goes through
// parseCallTool itself, so both paths refuse and accept the same input.
func fastCallTool(raw []byte) (callToolInput, *mcp.CallToolResult) {
	var v [3][]byte
	plain := raw != nil && jsonscan.Fields(raw, callToolKeys, v[:])
	path, args, approval := v[0], v[1], v[2]
	var in callToolInput
	var ok bool
	if plain {
		in.Path, ok = jsonscan.String(path)
		plain = ok
	}
	if plain && approval != nil {
		in.ApprovalID, ok = jsonscan.String(approval)
		plain = ok
	}
	if !plain || strings.TrimSpace(in.Path) != in.Path || in.Path == "" || strings.TrimSpace(in.ApprovalID) != in.ApprovalID {
		return parseCallTool(raw)
	}
	in.Arguments = args
	return in, nil
}

// plainID is a request id the fast path echoes back as it came: a string,
// or an integer. It is returned in a canonical spelling for the
// in-flight map.
func plainID(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s:" + s, true
	}
	for i, b := range raw {
		if !(b >= '0' && b <= '9' || b == '-' && i == 0) {
			return "", false
		}
	}
	if len(raw) > 19 || string(raw) == "-" {
		return "", false
	}
	return "n:" + string(raw), true
}

// plainMeta reports whether a request's _meta asks nothing of the
// transport: an object (or null) with no progress token and no protocol
// fields.
func plainMeta(meta []byte) bool {
	return jsonscan.Members(meta, func(k, _ []byte) bool {
		return string(k) != "progressToken" && !strings.HasPrefix(string(k), "io.modelcontextprotocol/")
	})
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// writeRPCError answers a JSON-RPC error for request id.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	body, _ := json.Marshal(rpcError{JSONRPC: "2.0", ID: id, Error: rpcErrorBody{code, message}})
	writeJSON(w, status, body)
}
