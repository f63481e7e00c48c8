package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/views/paths"
	"github.com/toolgate/toolgate/views/tools"
)

// degraded reports whether search runs on the PostgreSQL fallback.
func (s *Server) degraded() bool {
	d, ok := s.search.(interface{ Degraded() bool })
	return ok && d.Degraded()
}

// registryState is a workspace's registry: its sources and the tools they give it.
type registryState struct {
	Signature  string              `json:"signature"`
	TotalTools int                 `json:"total_tools"`
	Degraded   bool                `json:"degraded"`
	Sources    []registrySource    `json:"sources"`
	Quality    sources.Quality     `json:"quality"`
	Auth       []sourceAuthProfile `json:"auth_profiles"`
}

type registrySource struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	Namespace       string  `json:"namespace"`
	Type            string  `json:"type"`
	Scope           string  `json:"scope"`
	Enabled         bool    `json:"enabled"`
	State           string  `json:"state"`
	Error           string  `json:"error"`
	IndexError      string  `json:"index_error"`
	ToolCount       int     `json:"tool_count"`
	Generation      int64   `json:"generation"`
	Indexed         bool    `json:"indexed"`
	LastRefreshedAt *string `json:"last_refreshed_at"`
	LastSuccessAt   *string `json:"last_success_at"`
	LastFailureAt   *string `json:"last_failure_at"`
}

type sourceAuthProfile struct {
	SourceID string               `json:"source_id"`
	Profile  *sources.AuthProfile `json:"profile"`
}

// registryOf computes a workspace's registry state from its sources.
func (s *Server) registryOf(c echo.Context) (registryState, []db.Source, error) {
	all, err := s.store.Sources(c.Request().Context(), orgOf(c).ID, db.SourceFilter{WorkspaceID: workspaceIDOf(c)})
	if err != nil {
		return registryState{}, nil, err
	}
	st := registryState{Degraded: s.degraded(), Sources: []registrySource{}, Auth: []sourceAuthProfile{}}
	var sig []string
	var q sources.Quality
	for _, src := range all {
		st.Sources = append(st.Sources, registrySource{ID: src.ID, Name: src.Name, Namespace: src.Slug, Type: src.Type, Scope: src.Scope,
			Enabled: src.Enabled, State: src.State, Error: src.Error, IndexError: src.IndexError, ToolCount: src.ToolCount,
			Generation: src.Generation, Indexed: src.IndexedGeneration == src.Generation,
			LastRefreshedAt: optTime(src.LastRefreshedAt), LastSuccessAt: optTime(src.LastSuccessAt), LastFailureAt: optTime(src.LastFailureAt)})
		sig = append(sig, src.ID+":"+strconv.FormatInt(src.Generation, 10)+":"+strconv.FormatBool(src.Enabled))
		if !src.Enabled {
			continue
		}
		st.TotalTools += src.ToolCount
		if db.Present(src.Quality) {
			var sq sources.Quality
			_ = json.Unmarshal(src.Quality, &sq)
			n := float64(src.ToolCount)
			q.TypedArguments += sq.TypedArguments * n
			q.TypedResult += sq.TypedResult * n
			q.Described += sq.Described * n
		}
		if db.Present(src.AuthProfile) {
			ap := &sources.AuthProfile{}
			_ = json.Unmarshal(src.AuthProfile, ap)
			st.Auth = append(st.Auth, sourceAuthProfile{SourceID: src.ID, Profile: ap})
		}
	}
	if st.TotalTools > 0 {
		n := float64(st.TotalTools)
		st.Quality = sources.Quality{TypedArguments: q.TypedArguments / n, TypedResult: q.TypedResult / n, Described: q.Described / n}
	}
	sort.Strings(sig)
	st.Signature = sources.Hash([]byte(strings.Join(sig, ",")))
	return st, all, nil
}

func (s *Server) apiRegistry(c echo.Context) error {
	st, _, err := s.registryOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// workspaceHome is the registry dashboard.
func (s *Server) workspaceHome(c echo.Context) error {
	s.sessions.Remember(c.Request().Context(), sessionOrgKey, orgOf(c).Slug)
	m, err := s.meta(c, workspaceOf(c).Name, "overview")
	if err != nil {
		return err
	}
	reg, err := s.registryPanel(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, tools.Dashboard(tools.DashboardPage{Meta: m, Registry: reg, CanEdit: roleOf(c).AtLeast(auth.Admin),
		RefreshAllURL: sourcesURL(c) + "/refresh-all", SourcesURL: sourcesURL(c), NewSourceURL: sourcesURL(c) + "/new",
		CatalogURL: paths.WorkspaceSection(orgOf(c).Slug, workspaceOf(c).Slug, "tools")}))
}

// registryFragment answers the dashboard's polling.
func (s *Server) registryFragment(c echo.Context) error {
	reg, err := s.registryPanel(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, tools.RegistryPanel(reg))
}

func (s *Server) registryPanel(c echo.Context) (tools.Registry, error) {
	st, all, err := s.registryOf(c)
	if err != nil {
		return tools.Registry{}, err
	}
	r := tools.Registry{PollURL: paths.Workspace(orgOf(c).Slug, workspaceOf(c).Slug) + "/registry", TotalTools: st.TotalTools, Degraded: st.Degraded}
	for _, src := range all {
		row := tools.SourceState{Name: src.Name, URL: sourceURL(c, src.ID), Type: src.Type, Scope: src.Scope, State: src.State,
			Error: src.Error, IndexError: src.IndexError, Enabled: src.Enabled, ToolCount: src.ToolCount, LastRefreshed: src.LastRefreshedAt,
			Described: "–", Typed: "–"}
		if db.Present(src.Quality) {
			var q sources.Quality
			_ = json.Unmarshal(src.Quality, &q)
			row.Described, row.Typed = pct(q.Described), pct(q.TypedArguments)
		}
		if src.State == "queued" || src.State == "loading" || src.State == "indexing" {
			r.Busy = true
		}
		r.Sources = append(r.Sources, row)
	}
	return r, nil
}

func pct(f float64) string { return strconv.Itoa(int(f*100+0.5)) + "%" }

// refreshAll enqueues a refresh of every source the workspace sees.
func (s *Server) refreshAll(c echo.Context) error {
	all, err := s.store.Sources(c.Request().Context(), orgOf(c).ID, db.SourceFilter{WorkspaceID: workspaceIDOf(c)})
	if err != nil {
		return err
	}
	for _, src := range all {
		if err := s.sources.Refresher.Refresh(c.Request().Context(), src.OrgID, src.ID); err != nil {
			return err
		}
	}
	s.flash(c, "success", "Queued a refresh of "+strconv.Itoa(len(all))+" sources.")
	return s.seeOther(c, paths.Workspace(orgOf(c).Slug, workspaceOf(c).Slug))
}

// toolQuery reads the search parameters of the catalog and the API.
func toolQuery(c echo.Context, maxLimit int) search.Query {
	q := c.QueryParams()
	limit := min(max(atoiOr(q.Get("limit"), 20), 1), maxLimit)
	return search.Query{OrgID: orgOf(c).ID, WorkspaceID: workspaceOf(c).ID, Text: strings.TrimSpace(q.Get("q")),
		SourceID: q.Get("source"), Type: q.Get("type"), Approval: q.Get("approval"),
		Limit: limit, Offset: max(atoiOr(q.Get("offset"), 0), 0)}
}

// toolsURL is a tool's page in the catalog.
func toolURL(c echo.Context, path string) string {
	return paths.WorkspaceSection(orgOf(c).Slug, workspaceOf(c).Slug, "tools") + "/" + url.PathEscape(path)
}

func (s *Server) catalogPage(c echo.Context) error {
	q := toolQuery(c, 50)
	q.IncludeDisabled = true
	res, err := s.search.Search(c.Request().Context(), q)
	if err != nil {
		return err
	}
	base := paths.WorkspaceSection(orgOf(c).Slug, workspaceOf(c).Slug, "tools")
	r := tools.Results{Total: res.Total, Degraded: res.Degraded, Query: q.Text}
	for _, h := range res.Hits {
		r.Hits = append(r.Hits, tools.Hit{URL: toolURL(c, h.Path), Path: h.Path, Description: h.Description, SourceName: h.SourceName,
			Type: h.Type, DefaultApproval: h.DefaultApproval, Enabled: h.Enabled})
	}
	if q.Offset+len(res.Hits) < res.Total {
		next := c.QueryParams()
		next.Set("offset", strconv.Itoa(q.Offset+q.Limit))
		r.MoreURL = base + "?" + next.Encode()
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, tools.ResultsList(r))
	}
	m, err := s.meta(c, "Tools", "tools")
	if err != nil {
		return err
	}
	all, err := s.store.Sources(c.Request().Context(), orgOf(c).ID, db.SourceFilter{WorkspaceID: workspaceIDOf(c)})
	if err != nil {
		return err
	}
	p := tools.CatalogPage{Meta: m, Action: base, Q: q.Text, Source: q.SourceID, Type: q.Type, Approval: q.Approval, Results: r}
	for _, src := range all {
		p.Sources = append(p.Sources, tools.Option{Value: src.ID, Label: src.Name})
	}
	return render(c, http.StatusOK, tools.Catalog(p))
}

func (s *Server) toolPage(c echo.Context) error {
	t, err := s.store.ToolByPath(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, c.Param("path"))
	if err != nil {
		return err
	}
	return s.renderToolPage(c, http.StatusOK, t, s.tryItOf(c, t))
}

// renderToolPage renders a tool's page with its "Try it" section.
func (s *Server) renderToolPage(c echo.Context, status int, t db.VisibleTool, try tools.TryIt) error {
	m, err := s.meta(c, t.Path, "tools")
	if err != nil {
		return err
	}
	p := tools.ToolPage{Meta: m, Path: t.Path, Title: t.Title, Description: t.Description, Aliases: t.Aliases,
		DefaultApproval: t.DefaultApproval, SourceName: t.SourceName, SourceURL: sourceURL(c, t.SourceID), SourceEnabled: t.SourceEnabled,
		Type: t.SourceType, Inputs: schemaFields(t.InputSchema), InputJSON: indent(t.InputSchema),
		Example: exampleCall(t.Path, t.InputSchema), Annotations: annotationLabels(t.Annotations),
		CatalogURL: paths.WorkspaceSection(orgOf(c).Slug, workspaceOf(c).Slug, "tools"), TryIt: try}
	if db.Present(t.OutputSchema) {
		p.Outputs, p.OutputJSON = schemaFields(t.OutputSchema), indent(t.OutputSchema)
	}
	return render(c, status, tools.Tool(p))
}

func indent(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// jsonSchema is the part of a JSON Schema the tables show.
type jsonSchema struct {
	Type        any                    `json:"type"`
	Description string                 `json:"description"`
	Properties  map[string]*jsonSchema `json:"properties"`
	Required    []string               `json:"required"`
	Items       *jsonSchema            `json:"items"`
	Enum        []any                  `json:"enum"`
	Ref         string                 `json:"$ref"`
	OneOf       []*jsonSchema          `json:"oneOf"`
	AnyOf       []*jsonSchema          `json:"anyOf"`
}

// schemaFields flattens a schema's properties into table rows, two levels deep.
func schemaFields(raw json.RawMessage) []tools.Field {
	var s jsonSchema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	var out []tools.Field
	var walk func(s *jsonSchema, prefix string, depth int)
	walk = func(s *jsonSchema, prefix string, depth int) {
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		for _, n := range names {
			p := s.Properties[n]
			if p == nil {
				continue
			}
			out = append(out, tools.Field{Name: prefix + n, Type: typeOf(p), Required: required[n], Description: p.Description, Depth: depth})
			if depth < 2 && len(p.Properties) > 0 {
				walk(p, prefix+n+".", depth+1)
			}
		}
	}
	walk(&s, "", 0)
	return out
}

func typeOf(s *jsonSchema) string {
	switch t := s.Type.(type) {
	case string:
		if t == "array" && s.Items != nil {
			return typeOf(s.Items) + "[]"
		}
		if len(s.Enum) > 0 {
			return t + " (enum)"
		}
		return t
	case []any:
		var parts []string
		for _, p := range t {
			parts = append(parts, toString(p))
		}
		return strings.Join(parts, " | ")
	}
	switch {
	case len(s.OneOf) > 0:
		return "one of " + strconv.Itoa(len(s.OneOf))
	case len(s.AnyOf) > 0:
		return "any of " + strconv.Itoa(len(s.AnyOf))
	case len(s.Enum) > 0:
		return "enum"
	}
	return "any"
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// exampleCall is a call_tool request with a placeholder for every required argument.
func exampleCall(path string, raw json.RawMessage) string {
	var s jsonSchema
	_ = json.Unmarshal(raw, &s)
	args := map[string]any{}
	for _, r := range s.Required {
		if p := s.Properties[r]; p != nil {
			args[r] = placeholder(p)
		}
	}
	b, _ := json.MarshalIndent(map[string]any{"path": path, "arguments": args}, "", "  ")
	return string(b)
}

func placeholder(s *jsonSchema) any {
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch typeOf(s) {
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "object":
		return map[string]any{}
	}
	if strings.HasSuffix(typeOf(s), "[]") {
		return []any{}
	}
	return "…"
}

func annotationLabels(raw json.RawMessage) []string {
	var a sources.Annotations
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	var out []string
	for label, v := range map[string]*bool{"read-only": a.ReadOnlyHint, "destructive": a.DestructiveHint, "idempotent": a.IdempotentHint, "open world": a.OpenWorldHint} {
		if v != nil && *v {
			out = append(out, label)
		}
	}
	sort.Strings(out)
	return out
}

func (s *Server) apiTools(c echo.Context) error {
	q := toolQuery(c, 50)
	res, err := s.search.Search(c.Request().Context(), q)
	if err != nil {
		return err
	}
	if res.Hits == nil {
		res.Hits = []search.Hit{}
	}
	return c.JSON(http.StatusOK, map[string]any{"data": res.Hits, "total": res.Total, "degraded": res.Degraded, "limit": q.Limit, "offset": q.Offset})
}

func (s *Server) apiTool(c echo.Context) error {
	t, err := s.store.ToolByPath(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, c.Param("path"))
	if err != nil {
		return err
	}
	aliases := []string(t.Aliases)
	if aliases == nil {
		aliases = []string{}
	}
	return c.JSON(http.StatusOK, struct {
		toolJSON
		SourceName    string `json:"source_name"`
		SourceType    string `json:"source_type"`
		SourceEnabled bool   `json:"source_enabled"`
	}{toolJSON{Path: t.Path, Name: t.Name, Aliases: aliases, Title: t.Title, Description: t.Description, SourceID: t.SourceID,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations, DefaultApproval: t.DefaultApproval, Ref: t.Ref},
		t.SourceName, t.SourceType, t.SourceEnabled})
}
