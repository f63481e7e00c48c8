package handlers

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/auditlog"
	"github.com/toolgate/toolgate/views/paths"
	"github.com/toolgate/toolgate/views/ui"
)

// Page sizes of the audit log: the console's, and the API's default and
// largest.
const (
	auditPageSize     = 50
	auditDefaultLimit = 50
	auditMaxLimit     = 200
)

// auditCategories are the actions' prefixes a filter may name.
var auditCategories = []string{"organization", "workspace", "member", "source", "credential", "api_key", "policy", "approval", "approver"}

// auditFilter reads the filters the page and the API share: category,
// workspace (an id of the organization's) and cursor.
func auditFilter(q url.Values, workspaces []db.Workspace, problems validation.Errors) db.AuditFilter {
	var f db.AuditFilter
	if cat := q.Get("category"); cat != "" {
		if slices.Contains(auditCategories, cat) {
			f.Category = cat
		} else {
			problems.Add("category", "Choose one of "+strings.Join(auditCategories, ", ")+".")
		}
	}
	if ws := q.Get("workspace"); ws != "" {
		id, err := strconv.ParseInt(ws, 10, 64)
		if err != nil || !slices.ContainsFunc(workspaces, func(w db.Workspace) bool { return w.ID == id }) {
			problems.Add("workspace", "Choose one of the organization's workspaces by its id.")
		} else {
			f.WorkspaceID = &id
		}
	}
	if cur := q.Get("cursor"); cur != "" {
		b, err := base64.RawURLEncoding.DecodeString(cur)
		id, perr := strconv.ParseInt(string(b), 10, 64)
		if err != nil || perr != nil || id <= 0 {
			problems.Add("cursor", "This cursor is not valid; start again from the first page.")
		} else {
			f.Before = id
		}
	}
	return f
}

func auditCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

// ---- Console ----

func (s *Server) auditLogPage(c echo.Context) error {
	m, err := s.meta(c, "Audit log", "audit-log")
	if err != nil {
		return err
	}
	ctx, org, q := c.Request().Context(), orgOf(c), c.QueryParams()
	p := auditlog.Page{Meta: m, Action: paths.AuditLog(org.Slug),
		Filter: auditlog.Filter{Category: q.Get("category"), Workspace: q.Get("workspace"), Cursor: q.Get("cursor")}}
	workspaces, err := s.store.Workspaces(ctx, org.ID)
	if err != nil {
		return err
	}
	p.Workspaces = []ui.Option{{Value: "", Label: "All workspaces"}}
	for _, w := range workspaces {
		p.Workspaces = append(p.Workspaces, ui.Option{Value: strconv.FormatInt(w.ID, 10), Label: w.Name})
	}
	problems := validation.Errors{}
	f := auditFilter(q, workspaces, problems)
	if len(problems) > 0 {
		p.Errors = problems
		return page(c, http.StatusUnprocessableEntity, auditlog.List(p), auditlog.Body(p))
	}
	f.Limit = auditPageSize
	events, err := s.store.AuditLog(ctx, org.ID, f)
	if err != nil {
		return err
	}
	for _, e := range events.Entries {
		p.Rows = append(p.Rows, auditRow(org.Slug, e))
	}
	if events.Next != 0 {
		older := url.Values{"cursor": {auditCursor(events.Next)}}
		for k, v := range map[string]string{"category": p.Filter.Category, "workspace": p.Filter.Workspace} {
			if v != "" {
				older.Set(k, v)
			}
		}
		p.OlderURL = p.Action + "?" + older.Encode()
	}
	return page(c, http.StatusOK, auditlog.List(p), auditlog.Body(p))
}

// auditActions name the actions in words, with their badge.
var auditActions = map[string][2]string{
	"organization.updated":      {"Organization renamed", ""},
	"workspace.created":         {"Workspace added", "ok"},
	"workspace.updated":         {"Workspace renamed", ""},
	"workspace.deleted":         {"Workspace deleted", "danger"},
	"member.invited":            {"Invitation sent", "ok"},
	"member.invitation_revoked": {"Invitation revoked", "danger"},
	"member.joined":             {"Member joined", "ok"},
	"member.role_changed":       {"Role changed", "warn"},
	"member.removed":            {"Member removed", "danger"},
	"member.left":               {"Member left", ""},
	"source.created":            {"Source added", "ok"},
	"source.updated":            {"Source changed", ""},
	"source.deleted":            {"Source deleted", "danger"},
	"credential.created":        {"Credential added", "ok"},
	"credential.updated":        {"Credential changed", ""},
	"credential.replaced":       {"Credential replaced", ""},
	"credential.deleted":        {"Credential deleted", "danger"},
	"api_key.created":           {"API key created", "ok"},
	"api_key.revoked":           {"API key revoked", "danger"},
	"policy.created":            {"Rule added", "ok"},
	"policy.updated":            {"Rule changed", ""},
	"policy.enabled":            {"Rule enabled", "ok"},
	"policy.disabled":           {"Rule disabled", "warn"},
	"policy.moved":              {"Rule moved", ""},
	"policy.deleted":            {"Rule deleted", "danger"},
	"approval.approved":         {"Call approved", "ok"},
	"approval.denied":           {"Call denied", "danger"},
	"approver.added":            {"Approver added", "ok"},
	"approver.removed":          {"Approver removed", "danger"},
}

// auditRow is an event as the console shows it.
func auditRow(orgSlug string, e db.AuditEntry) auditlog.Row {
	r := auditlog.Row{ID: strconv.FormatInt(e.ID, 10), At: e.CreatedAt, Actor: auditActor(e), Action: e.Action}
	if a, ok := auditActions[e.Action]; ok {
		r.Action, r.Kind = a[0], a[1]
	}
	if e.WorkspaceName != nil {
		r.Workspace = *e.WorkspaceName
	}
	details := map[string]any{}
	_ = json.Unmarshal(e.Details, &details)
	r.Target, r.TargetURL = auditTarget(orgSlug, e, details)
	for _, k := range slices.Sorted(maps.Keys(details)) {
		if v := detailValue(details[k]); v != "" {
			r.Details = append(r.Details, auditlog.Detail{Label: strings.ReplaceAll(k, "_", " "), Value: v})
		}
	}
	return r
}

// auditActor names who acted: their name, else their email.
func auditActor(e db.AuditEntry) string {
	switch {
	case e.ActorName != nil && *e.ActorName != "":
		return *e.ActorName
	case e.ActorEmail != nil:
		return *e.ActorEmail
	case e.ActorID != nil:
		return "Deleted user"
	}
	return "toolgate"
}

// auditTarget names what an event is about, with a link when it still
// has a page of its own.
func auditTarget(orgSlug string, e db.AuditEntry, details map[string]any) (string, string) {
	ws := ""
	if e.WorkspaceSlug != nil {
		ws = *e.WorkspaceSlug
	}
	switch e.TargetType {
	case "source":
		name, _ := details["name"].(string)
		if ws != "" && e.Action != "source.deleted" {
			return "Source " + name, paths.WorkspaceSection(orgSlug, ws, "sources") + "/" + url.PathEscape(e.TargetID)
		}
		return "Source " + name, ""
	case "organization":
		name, _ := details["name"].(string)
		return "Organization " + name, paths.OrgSettings(orgSlug)
	case "workspace":
		name, _ := details["name"].(string)
		if ws != "" {
			return "Workspace " + name, paths.Workspace(orgSlug, ws)
		}
		return "Workspace " + name, ""
	case "invitation":
		if email, ok := details["email"].(string); ok {
			return "Invitation to " + email, ""
		}
	case "api_key":
		if name, ok := details["name"].(string); ok {
			return "API key " + name, ""
		}
	case "policy":
		if ws != "" {
			return "Workspace rule " + e.TargetID, paths.WorkspacePolicies(orgSlug, ws)
		}
		return "Organization rule " + e.TargetID, paths.OrgPolicies(orgSlug)
	case "approval":
		what := "Approval " + e.TargetID
		if tool, ok := details["tool"].(string); ok && tool != "" {
			what = "Call of " + tool
		}
		if ws != "" {
			return what, paths.Approval(orgSlug, ws, e.TargetID)
		}
		return what, ""
	case "credential":
		if e.SourceName != nil {
			return "Credential for " + *e.SourceName, ""
		}
		return "Credential " + e.TargetID, ""
	case "user":
		if e.TargetEmail != nil {
			return *e.TargetEmail, ""
		}
		return "User " + e.TargetID, ""
	}
	return e.TargetType + " " + e.TargetID, ""
}

// detailValue shows a detail's value in a few words; empty for none.
func detailValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return ui.Clip(v, 80)
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return ui.Clip(string(b), 80)
}

// ---- JSON API ----

// auditEventJSON is one event in the API.
type auditEventJSON struct {
	ID            int64           `json:"id"`
	Action        string          `json:"action"`
	TargetType    string          `json:"target_type"`
	TargetID      string          `json:"target_id"`
	WorkspaceID   *int64          `json:"workspace_id"`
	WorkspaceSlug *string         `json:"workspace_slug"`
	ActorID       *int64          `json:"actor_id"`
	ActorEmail    *string         `json:"actor_email"`
	Details       json.RawMessage `json:"details"`
	CreatedAt     string          `json:"created_at"`
}

func (s *Server) apiAuditEvents(c echo.Context) error {
	ctx, org, q := c.Request().Context(), orgOf(c), c.QueryParams()
	workspaces, err := s.store.Workspaces(ctx, org.ID)
	if err != nil {
		return err
	}
	problems := validation.Errors{}
	f := auditFilter(q, workspaces, problems)
	f.Limit = pageLimit(q, problems, auditDefaultLimit, auditMaxLimit)
	if err := problems.Err(); err != nil {
		return err
	}
	events, err := s.store.AuditLog(ctx, org.ID, f)
	if err != nil {
		return err
	}
	out := struct {
		Items      []auditEventJSON `json:"items"`
		NextCursor *string          `json:"next_cursor"`
	}{Items: make([]auditEventJSON, 0, len(events.Entries))}
	for _, e := range events.Entries {
		out.Items = append(out.Items, auditEventJSON{ID: e.ID, Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID,
			WorkspaceID: e.WorkspaceID, WorkspaceSlug: e.WorkspaceSlug, ActorID: e.ActorID, ActorEmail: e.ActorEmail,
			Details: e.Details, CreatedAt: e.CreatedAt.UTC().Format(time.RFC3339Nano)})
	}
	if events.Next != 0 {
		next := auditCursor(events.Next)
		out.NextCursor = &next
	}
	return c.JSON(http.StatusOK, out)
}
