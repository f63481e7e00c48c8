package handlers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/views/paths"
	"github.com/toolgate/toolgate/views/tools"
)

// tryItOf is a tool's "Try it" section before a call: the arguments of its
// example call, the button for members and above, and why it cannot run.
func (s *Server) tryItOf(c echo.Context, t db.VisibleTool) tools.TryIt {
	var example struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal([]byte(exampleCall(t.Path, t.InputSchema)), &example)
	ti := tools.TryIt{Action: toolURL(c, t.Path) + "/try", CSRF: csrfToken(c), Arguments: indent(example.Arguments),
		CanRun: roleOf(c).AtLeast(auth.Member)}
	if !t.SourceEnabled {
		ti.Blocked = fmt.Sprintf("The source %s is disabled, so its tools cannot run. An admin can enable it on the source's page.", t.SourceName)
	}
	return ti
}

// tryTool calls a tool as the signed-in person, through the gateway like
// an agent's call, and shows the answer in place of the form.
func (s *Server) tryTool(c echo.Context) error {
	ctx := c.Request().Context()
	t, err := s.store.ToolByPath(ctx, orgOf(c).ID, workspaceOf(c).ID, c.Param("path"))
	if err != nil {
		return err
	}
	ti := s.tryItOf(c, t)
	ti.Arguments = c.FormValue("arguments")
	if ti.Blocked != "" {
		return s.renderTryIt(c, http.StatusConflict, t, ti)
	}
	args, problem := argumentsJSON(ti.Arguments)
	if problem != "" {
		ti.Problems = []string{problem}
		return s.renderTryIt(c, http.StatusUnprocessableEntity, t, ti)
	}
	started := time.Now()
	res, err := s.gateway.Call(ctx, consoleCaller(c), t.Path, args, nil)
	var invalid *gateway.InvalidArgumentsError
	var missing *gateway.NotFoundError
	switch {
	case errors.As(err, &invalid):
		ti.Problems = invalid.Problems
		return s.renderTryIt(c, http.StatusUnprocessableEntity, t, ti)
	case errors.As(err, &missing):
		return db.ErrNotFound
	case err != nil:
		return fmt.Errorf("try tool %s: %w", t.Path, err)
	}
	ti.Result = tryResult(res, time.Since(started))
	if ti.Result.Held != nil {
		ti.Result.Held.URL = paths.Approval(orgOf(c).Slug, workspaceOf(c).Slug, ti.Result.Held.ApprovalID)
	}
	return s.renderTryIt(c, http.StatusOK, t, ti)
}

// consoleCaller is the signed-in member as the gateway's caller. A call a
// policy holds answers at once with its approval: a web request does not
// wait for a person.
func consoleCaller(c echo.Context) gateway.Caller {
	u := mustUser(c)
	return gateway.Caller{OrgID: orgOf(c).ID, WorkspaceID: workspaceOf(c).ID, UserID: u.ID, Via: gateway.ViaConsole,
		Role: string(roleOf(c)), UserEmail: u.Email, OrgSlug: orgOf(c).Slug, WorkspaceSlug: workspaceOf(c).Slug,
		NoApprovalWait: true}
}

// renderTryIt answers htmx with the section and anyone else with the
// whole tool page.
func (s *Server) renderTryIt(c echo.Context, status int, t db.VisibleTool, ti tools.TryIt) error {
	if isHTMX(c) {
		return render(c, status, tools.TryItSection(ti))
	}
	return s.renderToolPage(c, status, t, ti)
}

// argumentsJSON checks the textarea: empty is {}, anything else must be
// one JSON object. The problem says where the JSON breaks.
func argumentsJSON(text string) (json.RawMessage, string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return json.RawMessage("{}"), ""
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil && dec.More() {
		err = errors.New("unexpected text after the JSON value")
	}
	if err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			line, col := position(text, syntax.Offset)
			return nil, fmt.Sprintf("Not valid JSON at line %d, column %d: %s.", line, col, syntax.Error())
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, "Not valid JSON: it ends too early (a closing }, ] or quote is missing)."
		}
		return nil, fmt.Sprintf("Not valid JSON: %s.", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, "The arguments must be a JSON object, such as {} or {\"name\": \"value\"}."
	}
	return json.RawMessage(text), ""
}

// position is the line and column, counted from 1, of the last byte read
// when a decoder stopped after offset bytes.
func position(text string, offset int64) (line, col int) {
	before := text[:max(min(int(offset), len(text))-1, 0)]
	line = strings.Count(before, "\n") + 1
	return line, len(before) - strings.LastIndex(before, "\n")
}

// tryResult shapes an answer for the page: text as it is, JSON text
// pretty-printed, images shown, other content named.
func tryResult(res *mcp.CallToolResult, took time.Duration) *tools.TryResult {
	r := &tools.TryResult{IsError: res.IsError, Duration: took.Round(time.Millisecond).String()}
	if took < time.Millisecond {
		r.Duration = took.Round(time.Microsecond).String()
	}
	if p, ok := res.StructuredContent.(gateway.PendingResult); ok {
		// Held for approval: the page links the approval instead of
		// telling an agent how to resume.
		r.Held = &tools.TryHeld{ApprovalID: p.ApprovalID, ExpiresAt: p.ExpiresAt.Format("2006-01-02 15:04")}
		return r
	}
	for _, content := range res.Content {
		r.Content = append(r.Content, tryContent(content))
	}
	if res.StructuredContent != nil {
		if b, err := json.MarshalIndent(res.StructuredContent, "", "  "); err == nil {
			r.Structured = string(b)
		}
	}
	// An upstream's JSON answer often comes twice, as text and as the
	// structured result: show it once.
	for _, c := range r.Content {
		if c.Kind == tools.ContentJSON && sameJSON(c.Text, r.Structured) {
			r.Structured = ""
		}
	}
	return r
}

func tryContent(content mcp.Content) tools.TryContent {
	switch c := content.(type) {
	case *mcp.TextContent:
		if pretty, ok := prettyJSON(c.Text); ok {
			return tools.TryContent{Kind: tools.ContentJSON, Text: pretty}
		}
		return tools.TryContent{Kind: tools.ContentText, Text: c.Text}
	case *mcp.ImageContent:
		if strings.HasPrefix(c.MIMEType, "image/") && !strings.ContainsAny(c.MIMEType, ";, ") {
			return tools.TryContent{Kind: tools.ContentImage, ImageSrc: "data:" + c.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(c.Data)}
		}
		return tools.TryContent{Kind: tools.ContentOther, Text: fmt.Sprintf("Image of type %q (%s), not shown.", c.MIMEType, byteSize(len(c.Data)))}
	case *mcp.AudioContent:
		return tools.TryContent{Kind: tools.ContentOther, Text: fmt.Sprintf("Audio (%s, %s).", c.MIMEType, byteSize(len(c.Data)))}
	case *mcp.ResourceLink:
		return tools.TryContent{Kind: tools.ContentOther, Text: fmt.Sprintf("Link to the resource %s (%s).", c.URI, orDash(c.MIMEType))}
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return tools.TryContent{Kind: tools.ContentOther, Text: "An empty embedded resource."}
		}
		if c.Resource.Text != "" {
			if pretty, ok := prettyJSON(c.Resource.Text); ok {
				return tools.TryContent{Kind: tools.ContentJSON, Text: pretty}
			}
			return tools.TryContent{Kind: tools.ContentText, Text: c.Resource.Text}
		}
		return tools.TryContent{Kind: tools.ContentOther, Text: fmt.Sprintf("Embedded resource %s (%s, %s).", c.Resource.URI,
			orDash(c.Resource.MIMEType), byteSize(len(c.Resource.Blob)))}
	}
	return tools.TryContent{Kind: tools.ContentOther, Text: fmt.Sprintf("Content of type %T, not shown.", content)}
}

// prettyJSON indents text that is a JSON object or array.
func prettyJSON(text string) (string, bool) {
	trimmed := strings.TrimSpace(text)
	if !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "[") || !json.Valid([]byte(trimmed)) {
		return "", false
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(trimmed), "", "  ") != nil {
		return "", false
	}
	return b.String(), true
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func byteSize(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

func orDash(s string) string {
	if s == "" {
		return "no type given"
	}
	return s
}
