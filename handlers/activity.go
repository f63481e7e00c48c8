package handlers

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/activity"
	"github.com/toolgate/toolgate/views/paths"
	"github.com/toolgate/toolgate/views/ui"
)

// Page sizes of the activity list: the console's, and the API's default
// and largest.
const (
	activityPageSize     = 50
	activityDefaultLimit = 50
	activityMaxLimit     = 200
)

// activityRanges are the console's time choices.
var activityRanges = map[string]time.Duration{
	"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour,
}

// activityFilter reads the filters the page and the API share: tool, key,
// outcome and cursor. A tool ending in * is a prefix; key is a key's id or
// "console" for calls made without a key.
func activityFilter(q url.Values, problems validation.Errors) db.ToolCallFilter {
	var f db.ToolCallFilter
	tool := strings.TrimSpace(q.Get("tool"))
	switch {
	case len(tool) > audit.MaxToolBytes:
		problems.Add("tool", fmt.Sprintf("Use at most %d characters.", audit.MaxToolBytes))
	case strings.Contains(strings.TrimSuffix(tool, "*"), "*"):
		problems.Add("tool", "Use * only at the end, for a prefix such as github.*")
	case strings.HasSuffix(tool, "*"):
		f.Tool, f.ToolPrefix = strings.TrimSuffix(tool, "*"), true
	default:
		f.Tool = tool
	}
	switch key := strings.TrimSpace(q.Get("key")); key {
	case "":
	case "console":
		f.Console = true
	default:
		id, err := strconv.ParseInt(key, 10, 64)
		if err != nil || id <= 0 {
			problems.Add("key", "Choose an API key by its id, or console for calls made on the console.")
		} else {
			f.KeyID = &id
		}
	}
	if o := q.Get("outcome"); o != "" {
		if slices.Contains(audit.Outcomes, o) {
			f.Outcome = o
		} else {
			problems.Add("outcome", "Choose one of "+strings.Join(audit.Outcomes, ", ")+".")
		}
	}
	if cur := q.Get("cursor"); cur != "" {
		if c, ok := decodeCursor(cur); ok {
			f.Before = &c
		} else {
			problems.Add("cursor", "This cursor is not valid; start again from the first page.")
		}
	}
	return f
}

// pageActivityFilter reads the console's filters: the shared ones, a time
// range (1h, 24h, 7d, 30d) or a custom range from and to, in UTC.
func pageActivityFilter(q url.Values, now time.Time) (db.ToolCallFilter, validation.Errors) {
	problems := validation.Errors{}
	f := activityFilter(q, problems)
	f.Limit = activityPageSize
	rng, from, to := q.Get("range"), strings.TrimSpace(q.Get("from")), strings.TrimSpace(q.Get("to"))
	if d, ok := activityRanges[rng]; ok && from == "" && to == "" {
		since := now.Add(-d)
		f.Since = &since
		return f, problems
	}
	if rng != "" && rng != "custom" && activityRanges[rng] == 0 {
		problems.Add("range", "Choose a time range from the list.")
	}
	if rng == "custom" && from == "" && to == "" {
		problems.Add("from", "Enter a start, an end, or both.")
	}
	f.Since = consoleTime(from, "from", problems)
	f.Until = consoleTime(to, "to", problems)
	if f.Since != nil && f.Until != nil && !f.Until.After(*f.Since) {
		problems.Add("to", "Enter an end after the start.")
	}
	return f, problems
}

// consoleTime reads a datetime-local value (or RFC 3339) as UTC.
func consoleTime(v, field string, problems validation.Errors) *time.Time {
	if v == "" {
		return nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return &t
		}
	}
	problems.Add(field, "Enter a date and time, such as 2026-01-02T15:04.")
	return nil
}

// apiActivityFilter reads the API's filters: the shared ones, since and
// until (RFC 3339) and limit.
func apiActivityFilter(q url.Values) (db.ToolCallFilter, error) {
	problems := validation.Errors{}
	f := activityFilter(q, problems)
	f.Since = apiTime(q.Get("since"), "since", problems)
	f.Until = apiTime(q.Get("until"), "until", problems)
	if f.Since != nil && f.Until != nil && !f.Until.After(*f.Since) {
		problems.Add("until", "Use a time after since.")
	}
	f.Limit = pageLimit(q, problems, activityDefaultLimit, activityMaxLimit)
	return f, problems.Err()
}

// pageLimit reads an API list's limit: def when absent, a problem unless
// it is a number from 1 to most.
func pageLimit(q url.Values, problems validation.Errors, def, most int) int {
	v := q.Get("limit")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		problems.Add("limit", fmt.Sprintf("Use a number from 1 to %d.", most))
	}
	return n
}

func apiTime(v, field string, problems validation.Errors) *time.Time {
	if v == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		problems.Add(field, "Use an RFC 3339 time, such as 2026-01-02T15:04:05Z.")
		return nil
	}
	return &t
}

// encodeCursor makes a page's position opaque: the last call's start (in
// microseconds, PostgreSQL's precision) and id.
func encodeCursor(c db.ToolCallCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.StartedAt.UnixMicro(), 10) + "." + strconv.FormatInt(c.ID, 10)))
}

func decodeCursor(s string) (db.ToolCallCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return db.ToolCallCursor{}, false
	}
	at, id, ok := strings.Cut(string(b), ".")
	micro, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 {
		return db.ToolCallCursor{}, false
	}
	return db.ToolCallCursor{StartedAt: time.UnixMicro(micro), ID: n}, true
}

// ---- Console ----

func activityURL(c echo.Context) string {
	return paths.WorkspaceSection(orgOf(c).Slug, workspaceOf(c).Slug, "activity")
}

func (s *Server) activityPage(c echo.Context) error {
	m, err := s.meta(c, "Activity", "activity")
	if err != nil {
		return err
	}
	ctx, org, w, q := c.Request().Context(), orgOf(c), workspaceOf(c), c.QueryParams()
	p := activity.Page{Meta: m, Action: activityURL(c), APIKeysURL: paths.APIKeys(org.Slug, w.Slug),
		Filter: activity.Filter{Tool: q.Get("tool"), Key: q.Get("key"), Outcome: q.Get("outcome"), Range: q.Get("range"),
			From: q.Get("from"), To: q.Get("to"), Cursor: q.Get("cursor")}}
	if p.Filter.From != "" || p.Filter.To != "" {
		p.Filter.Range = "custom" // a range of one's own wins over the presets
	}
	keys, err := s.store.ToolCallKeys(ctx, org.ID, w.ID)
	if err != nil {
		return err
	}
	p.Keys = []ui.Option{{Value: "", Label: "All keys"}, {Value: "console", Label: "Console (no key)"}}
	for _, k := range keys {
		label := k.Name
		if k.Revoked {
			label += " (revoked)"
		}
		p.Keys = append(p.Keys, ui.Option{Value: strconv.FormatInt(k.ID, 10), Label: label})
	}
	f, problems := pageActivityFilter(q, time.Now())
	if len(problems) > 0 {
		p.Errors = problems
		return page(c, http.StatusUnprocessableEntity, activity.List(p), activity.Body(p))
	}
	calls, err := s.store.ToolCalls(ctx, org.ID, w.ID, f)
	if err != nil {
		return err
	}
	for _, call := range calls.Calls {
		id := strconv.FormatInt(call.ID, 10)
		p.Rows = append(p.Rows, activity.Row{ID: id, URL: p.Action + "/" + id, StartedAt: call.StartedAt, Tool: call.Tool,
			Key: callKey(call), User: callUser(call), Outcome: call.Outcome, Status: callStatus(call), Duration: callDuration(call)})
	}
	if calls.Next != nil {
		older := url.Values{}
		for k, v := range map[string]string{"tool": p.Filter.Tool, "key": p.Filter.Key, "outcome": p.Filter.Outcome,
			"range": p.Filter.Range, "from": p.Filter.From, "to": p.Filter.To, "cursor": encodeCursor(*calls.Next)} {
			if v != "" {
				older.Set(k, v)
			}
		}
		p.OlderURL = p.Action + "?" + older.Encode()
	}
	return page(c, http.StatusOK, activity.List(p), activity.Body(p))
}

// toolCallOf loads the route's call (:id) within its workspace; another
// workspace's is db.ErrNotFound.
func (s *Server) toolCallOf(c echo.Context) (db.ToolCall, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return db.ToolCall{}, err
	}
	return s.store.ToolCall(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, id)
}

func (s *Server) activityCallPage(c echo.Context) error {
	call, err := s.toolCallOf(c)
	if err != nil {
		return err
	}
	m, err := s.meta(c, call.Tool, "activity")
	if err != nil {
		return err
	}
	d := activity.Detail{Meta: m, ListURL: activityURL(c), ID: strconv.FormatInt(call.ID, 10), Tool: call.Tool,
		StartedAt: call.StartedAt, Outcome: call.Outcome, Error: call.Error, Arguments: indent(call.Arguments),
		SourceID: call.SourceID, Status: callStatus(call), Duration: callDuration(call), Key: callKey(call),
		User: callUser(call), Via: call.Via}
	var tr audit.Truncated
	d.Truncated = json.Unmarshal(call.Arguments, &tr) == nil && tr.Truncated && tr.Limit > 0
	if call.SourceID != "" {
		d.SourceURL = sourceURL(c, call.SourceID)
	}
	return render(c, http.StatusOK, activity.Call(d))
}

// callKey names a call's key: its name, "Console" for calls made there, or
// "Deleted key" when the key is gone.
func callKey(call db.ToolCall) string {
	switch {
	case call.KeyName != nil && call.KeyRevoked:
		return *call.KeyName + " (revoked)"
	case call.KeyName != nil:
		return *call.KeyName
	case call.Via == "console":
		return "Console"
	}
	return "Deleted key"
}

// callUser names a call's user: their name, else their email.
func callUser(call db.ToolCall) string {
	switch {
	case call.UserName != nil && *call.UserName != "":
		return *call.UserName
	case call.UserEmail != nil:
		return *call.UserEmail
	}
	return "–"
}

func callStatus(call db.ToolCall) string {
	if call.UpstreamStatus == nil {
		return "–"
	}
	return strconv.Itoa(*call.UpstreamStatus)
}

func callDuration(call db.ToolCall) string {
	us := call.DurationUS
	switch {
	case us < 1000:
		return fmt.Sprintf("%.1f ms", float64(us)/1000)
	case us < 1_000_000:
		return strconv.FormatInt(us/1000, 10) + " ms"
	}
	return fmt.Sprintf("%.2f s", float64(us)/1e6)
}

// ---- JSON API ----

// toolCallJSON is one audited call in the API.
type toolCallJSON struct {
	ID        int64   `json:"id"`
	Tool      string  `json:"tool"`
	SourceID  string  `json:"source_id"`
	Via       string  `json:"via"`
	KeyID     *int64  `json:"key_id"`
	KeyName   *string `json:"key_name"`
	UserID    *int64  `json:"user_id"`
	UserEmail *string `json:"user_email"`
	// Arguments are as the audit keeps them: secret-looking keys redacted,
	// capped in size.
	Arguments      json.RawMessage `json:"arguments"`
	Outcome        string          `json:"outcome"`
	Error          string          `json:"error"`
	UpstreamStatus *int            `json:"upstream_status"`
	StartedAt      string          `json:"started_at"`
	DurationUS     int64           `json:"duration_us"`
}

// activityTimeFormat is RFC 3339 with PostgreSQL's microseconds, so calls
// in the same second keep their order.
const activityTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

func toToolCallJSON(call db.ToolCall) toolCallJSON {
	return toolCallJSON{ID: call.ID, Tool: call.Tool, SourceID: call.SourceID, Via: call.Via, KeyID: call.KeyID,
		KeyName: call.KeyName, UserID: call.UserID, UserEmail: call.UserEmail, Arguments: call.Arguments,
		Outcome: call.Outcome, Error: call.Error, UpstreamStatus: call.UpstreamStatus,
		StartedAt: call.StartedAt.UTC().Format(activityTimeFormat), DurationUS: call.DurationUS}
}

func (s *Server) apiActivity(c echo.Context) error {
	f, err := apiActivityFilter(c.QueryParams())
	if err != nil {
		return err
	}
	calls, err := s.store.ToolCalls(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, f)
	if err != nil {
		return err
	}
	out := struct {
		Items      []toolCallJSON `json:"items"`
		NextCursor *string        `json:"next_cursor"`
	}{Items: make([]toolCallJSON, 0, len(calls.Calls))}
	for _, call := range calls.Calls {
		out.Items = append(out.Items, toToolCallJSON(call))
	}
	if calls.Next != nil {
		next := encodeCursor(*calls.Next)
		out.NextCursor = &next
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiActivityCall(c echo.Context) error {
	call, err := s.toolCallOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toToolCallJSON(call))
}
