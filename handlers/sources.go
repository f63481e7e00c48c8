package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/paths"
	viewsources "github.com/toolgate/toolgate/views/sources"
)

// Keys and sizes of the sources pages.
const (
	ctxSource     = "toolgate.source"
	toolsPageSize = 50
)

// sourceOf returns the source of a route behind loadSource.
func sourceOf(c echo.Context) db.Source {
	src, _ := c.Get(ctxSource).(db.Source)
	return src
}

// loadSource resolves :id to a source the route's workspace sees (its own
// or its organization's); on organization routes, to an organization
// source. Anything else is 404.
func (s *Server) loadSource(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		src, err := s.store.Source(c.Request().Context(), orgOf(c).ID, c.Param("id"))
		if err != nil {
			return err
		}
		w := workspaceOf(c)
		visible := src.WorkspaceID == nil || w.ID != 0 && *src.WorkspaceID == w.ID
		if !visible {
			return db.ErrNotFound
		}
		c.Set(ctxSource, src)
		return next(c)
	}
}

// workspaceIDOf is the route's workspace id, or nil on organization routes.
func workspaceIDOf(c echo.Context) *int64 {
	if w := workspaceOf(c); w.ID != 0 {
		return &w.ID
	}
	return nil
}

// sourcesURL is the list of the route's workspace.
func sourcesURL(c echo.Context) string {
	return paths.WorkspaceSection(orgOf(c).Slug, workspaceOf(c).Slug, "sources")
}

func sourceURL(c echo.Context, id string) string { return sourcesURL(c) + "/" + url.PathEscape(id) }

func (s *Server) sourcesPage(c echo.Context) error {
	m, err := s.meta(c, "Sources", "sources")
	if err != nil {
		return err
	}
	q := c.QueryParams()
	f := viewsources.Filter{Q: strings.TrimSpace(q.Get("q")), Type: q.Get("type"), State: q.Get("state"), Scope: q.Get("scope"), Sort: q.Get("sort")}
	list, err := s.store.Sources(c.Request().Context(), orgOf(c).ID, db.SourceFilter{
		WorkspaceID: workspaceIDOf(c), Query: f.Q, Type: f.Type, State: f.State, Scope: f.Scope, Sort: f.Sort})
	if err != nil {
		return err
	}
	p := viewsources.ListPage{Meta: m, Filter: f, CanEdit: roleOf(c).AtLeast(auth.Admin), Action: sourcesURL(c),
		NewURL: sourcesURL(c) + "/new", ImportURL: sourcesURL(c) + "/import"}
	for _, src := range list {
		p.Rows = append(p.Rows, viewsources.Row{URL: sourceURL(c, src.ID), Name: src.Name, Slug: src.Slug, Type: src.Type,
			Scope: src.Scope, State: src.State, Enabled: src.Enabled, ToolCount: src.ToolCount, LastRefreshed: src.LastRefreshedAt, Error: src.Error})
	}
	return render(c, http.StatusOK, viewsources.List(p))
}

func (s *Server) newSourcePage(c echo.Context) error {
	typ := c.QueryParam("type")
	if typ == "" {
		typ = string(sources.TypeMCP)
	}
	transport := sources.TransportStreamableHTTP
	if s.sources.Rules.AllowStdio {
		transport = sources.TransportStdio
	}
	return s.renderSourceForm(c, http.StatusOK, viewsources.Form{Type: typ, Scope: "workspace", Transport: transport}, nil)
}

// renderSourceForm renders the new or edit page, or for htmx the form.
func (s *Server) renderSourceForm(c echo.Context, status int, f viewsources.Form, test *viewsources.TestPanel) error {
	title := "New source"
	if f.Editing {
		title = "Edit " + f.Name
	}
	m, err := s.meta(c, title, "sources")
	if err != nil {
		return err
	}
	f.CSRF, f.AllowStdio, f.CanOrgScope = m.CSRF, s.sources.Rules.AllowStdio, true
	if f.Editing {
		f.Action = sourceURL(c, sourceOf(c).ID)
		f.TestAction = f.Action + "/test-form"
	} else {
		f.Action = sourcesURL(c)
		f.TestAction = sourcesURL(c) + "/test"
	}
	page := viewsources.New(viewsources.NewPage{Meta: m, Form: f, Test: test})
	if isHTMX(c) && test == nil {
		return render(c, status, viewsources.FormFragment(f))
	}
	return render(c, status, page)
}

func (s *Server) createSource(c echo.Context) error {
	f, in, problems := sourceForm(c)
	var src db.Source
	err := problems.Err()
	if err == nil {
		in.ActorID = actorID(c)
		src, err = s.sources.Create(c.Request().Context(), orgOf(c).ID, workspaceIDOf(c), in)
	}
	if err == nil {
		src, err = s.saveApprovalOverride(c.Request().Context(), src, overrideOf(f.ApprovalOverride))
	}
	if errors.As(err, &f.Errors) {
		return s.renderSourceForm(c, http.StatusUnprocessableEntity, f, nil)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Saved "+src.Name+". Its tools are being discovered; this page updates by itself.")
	return s.seeOther(c, sourceURL(c, src.ID))
}

// testSourceForm runs discovery of the form's unsaved configuration.
func (s *Server) testSourceForm(c echo.Context) error {
	f, in, problems := sourceForm(c)
	if sourceOf(c).ID != "" {
		f.Editing = true
		in.Type, in.Scope = sources.Type(sourceOf(c).Type), sources.Scope(sourceOf(c).Scope)
		f.Type = sourceOf(c).Type
		if stored, err := s.viewOf(sourceOf(c)); err == nil {
			if edited, perr := sources.ParseConfig(in.Type, in.Config, s.sources.Rules); len(perr) == 0 {
				sources.KeepMasked(edited, stored.config)
				in.Config, _ = json.Marshal(edited)
			}
		}
	}
	var res sources.TestResult
	err := problems.Err()
	if err == nil {
		res, err = s.sources.Test(c.Request().Context(), in)
	}
	if errors.As(err, &f.Errors) {
		if isHTMX(c) {
			return render(c, http.StatusUnprocessableEntity, viewsources.Test(viewsources.TestPanel{Invalid: true}))
		}
		return s.renderSourceForm(c, http.StatusUnprocessableEntity, f, &viewsources.TestPanel{Invalid: true})
	} else if err != nil {
		return err
	}
	panel := viewsources.TestPanel{Result: &res}
	if isHTMX(c) {
		return render(c, http.StatusOK, viewsources.Test(panel))
	}
	return s.renderSourceForm(c, http.StatusOK, f, &panel)
}

// sourceView is a saved source with its configuration parsed and masked.
type sourceView struct {
	db.Source
	config sources.Config
	masked sources.Config
}

func (s *Server) viewOf(src db.Source) (sourceView, error) {
	cfg, problems := sources.ParseConfig(sources.Type(src.Type), src.Config, sources.Rules{AllowStdio: true})
	if len(problems) > 0 {
		return sourceView{}, problems
	}
	return sourceView{Source: src, config: cfg, masked: sources.Masked(cfg)}, nil
}

func (s *Server) sourcePage(c echo.Context) error {
	return s.renderSource(c, http.StatusOK, nil, "")
}

func (s *Server) renderSource(c echo.Context, status int, test *sources.TestResult, deleteError string) error {
	src := sourceOf(c)
	v, err := s.viewOf(src)
	if err != nil {
		return err
	}
	m, err := s.meta(c, src.Name, "sources")
	if err != nil {
		return err
	}
	page := max(1, atoiOr(c.QueryParam("page"), 1))
	pages := max(1, (src.ToolCount+toolsPageSize-1)/toolsPageSize)
	page = min(page, pages)
	tools, err := s.store.Tools(c.Request().Context(), src.OrgID, src.ID, toolsPageSize, (page-1)*toolsPageSize)
	if err != nil {
		return err
	}
	p := viewsources.DetailPage{Meta: m, Source: detailOf(c, v), Page: page, Pages: pages, CanEdit: roleOf(c).AtLeast(auth.Admin),
		CSRF: m.CSRF, ListURL: sourcesURL(c), Test: test, DeleteError: deleteError}
	for _, t := range tools {
		p.Tools = append(p.Tools, viewsources.ToolRow{Path: t.Path, Description: t.Description, DefaultApproval: t.DefaultApproval})
	}
	if err := s.sourceCredentials(c, src, &p); err != nil {
		return err
	}
	if page > 1 {
		p.PrevURL = sourceURL(c, src.ID) + "?page=" + strconv.Itoa(page-1)
	}
	if page < pages {
		p.NextURL = sourceURL(c, src.ID) + "?page=" + strconv.Itoa(page+1)
	}
	return render(c, status, viewsources.DetailView(p))
}

// sourceCredentials fills the source page's credentials card: what applies
// to the reader in this workspace, and where to add one.
func (s *Server) sourceCredentials(c echo.Context, src db.Source, p *viewsources.DetailPage) error {
	place := credentials.Place{OrgID: src.OrgID, WorkspaceID: workspaceIDOf(c)}
	actor := credentials.Actor{UserID: actorID(c), Role: roleOf(c)}
	creds, err := s.creds.List(c.Request().Context(), place, actor, "", src.ID)
	if err != nil {
		return err
	}
	list := paths.WorkspaceCredentials(orgOf(c).Slug, workspaceOf(c).Slug)
	for _, cr := range creds {
		a := credentials.AuthOf(cr)
		p.Credentials = append(p.Credentials, viewsources.CredentialRow{Scope: credentials.Scope(cr.Scope).Label(), Describe: a.Type.Label() + " · " + a.Describe(),
			Hint: cr.Hint, URL: paths.Credential(list, cr.ID), LastUsed: cr.LastUsedAt})
	}
	if actor.Role.AtLeast(auth.Member) {
		p.NewCredentialURL = list + "/new?source=" + url.QueryEscape(src.ID)
	}
	return nil
}

func detailOf(c echo.Context, v sourceView) viewsources.Detail {
	cfg, _ := json.MarshalIndent(v.masked, "", "  ")
	d := viewsources.Detail{ID: v.ID, Name: v.Name, Slug: v.Slug, Type: v.Type, Scope: v.Scope, State: v.State, Error: v.Error,
		Enabled: v.Enabled, Config: string(cfg), ToolCount: v.ToolCount, Server: v.Server, BaseURL: v.BaseURL, SpecHash: v.SpecHash,
		DiscoveryMS: v.DiscoveryMS, LastRefreshed: v.LastRefreshedAt, LastSuccess: v.LastSuccessAt, LastFailure: v.LastFailureAt,
		CreatedAt: v.CreatedAt, URL: sourceURL(c, v.ID), EditURL: sourceURL(c, v.ID) + "/edit", SecretKeys: sources.SecretKeys(v.config),
		ApprovalOverride: deref(v.ApprovalOverride)}
	_ = json.Unmarshal(v.Warnings, &d.Warnings)
	if db.Present(v.Quality) {
		d.Quality = &sources.Quality{}
		_ = json.Unmarshal(v.Quality, d.Quality)
	}
	if db.Present(v.AuthProfile) {
		d.AuthProfile = &sources.AuthProfile{}
		_ = json.Unmarshal(v.AuthProfile, d.AuthProfile)
	}
	return d
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// sourceState answers the state badge's polling; when the refresh is over
// it asks htmx to reload the page, which then shows the new tools.
func (s *Server) sourceState(c echo.Context) error {
	src := sourceOf(c)
	if !viewsources.Busy(src.State) {
		c.Response().Header().Set("HX-Refresh", "true")
	}
	return render(c, http.StatusOK, viewsources.StateBadge(sourceURL(c, src.ID)+"/state", src.State, src.Enabled))
}

func (s *Server) editSourcePage(c echo.Context) error {
	v, err := s.viewOf(sourceOf(c))
	if err != nil {
		return err
	}
	f := formOf(sourceView{Source: v.Source, config: v.masked})
	return s.renderSourceForm(c, http.StatusOK, f, nil)
}

func (s *Server) updateSource(c echo.Context) error {
	src := sourceOf(c)
	f, in, problems := sourceForm(c)
	f.Editing, f.Type = true, src.Type
	in.Type = sources.Type(src.Type)
	if in.Config == nil {
		f.Errors = validation.Field("type", "The type of a source cannot change.")
		return s.renderSourceForm(c, http.StatusUnprocessableEntity, f, nil)
	}
	err := problems.Err()
	var updated db.Source
	if err == nil {
		updated, err = s.sources.Update(c.Request().Context(), src, sources.Patch{Name: &in.Name, Config: in.Config, ActorID: actorID(c)})
	}
	if err == nil {
		updated, err = s.saveApprovalOverride(c.Request().Context(), updated, overrideOf(f.ApprovalOverride))
	}
	if errors.As(err, &f.Errors) {
		return s.renderSourceForm(c, http.StatusUnprocessableEntity, f, nil)
	} else if err != nil {
		return err
	}
	s.flashRefresh(c, updated, "Saved")
	return s.seeOther(c, sourceURL(c, src.ID))
}

func (s *Server) flashRefresh(c echo.Context, src db.Source, verb string) {
	s.flash(c, "success", verb+" "+src.Name+"; a refresh is on its way.")
}

func (s *Server) refreshSource(c echo.Context) error {
	src, err := s.sources.Refresh(c.Request().Context(), sourceOf(c))
	if err != nil {
		return err
	}
	s.flashRefresh(c, src, "Queued")
	return s.seeOther(c, sourceURL(c, src.ID))
}

func (s *Server) testSavedSource(c echo.Context) error {
	res, err := s.sources.TestSaved(c.Request().Context(), sourceOf(c))
	if err != nil {
		return err
	}
	return s.renderSource(c, http.StatusOK, &res, "")
}

func (s *Server) setSourceEnabled(c echo.Context) error {
	enabled := c.FormValue("enabled") == "true"
	src, err := s.sources.SetEnabled(c.Request().Context(), sourceOf(c), actorID(c), enabled)
	if err != nil {
		return err
	}
	if enabled {
		s.flash(c, "success", "Enabled "+src.Name+".")
	} else {
		s.flash(c, "success", "Disabled "+src.Name+": its tools are hidden until it is enabled again.")
	}
	return s.seeOther(c, sourceURL(c, src.ID))
}

func (s *Server) deleteSource(c echo.Context) error {
	src := sourceOf(c)
	if strings.TrimSpace(c.FormValue("confirm")) != src.Slug {
		return s.renderSource(c, http.StatusUnprocessableEntity, nil, "Type "+src.Slug+" to confirm.")
	}
	if err := s.sources.Delete(c.Request().Context(), src, actorID(c)); err != nil {
		return err
	}
	s.flash(c, "success", "Deleted "+src.Name+".")
	return s.seeOther(c, sourcesURL(c))
}

func (s *Server) importPage(c echo.Context) error {
	return s.renderImport(c, http.StatusOK, viewsources.ImportPage{})
}

func (s *Server) renderImport(c echo.Context, status int, p viewsources.ImportPage) error {
	m, err := s.meta(c, "Import MCP servers", "sources")
	if err != nil {
		return err
	}
	p.Meta, p.CSRF, p.Action, p.ListURL = m, m.CSRF, sourcesURL(c)+"/import", sourcesURL(c)
	return render(c, status, viewsources.Import(p))
}

// importSources previews a client configuration, or creates its sources
// when step=create.
func (s *Server) importSources(c echo.Context) error {
	text := c.FormValue("config")
	if fh, err := c.FormFile("config_file"); err == nil && fh.Size > 0 {
		file, err := fh.Open()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(file, maxBody))
		file.Close()
		if err != nil {
			return err
		}
		text = string(b)
	}
	p := viewsources.ImportPage{Text: text}
	if c.FormValue("step") != "create" {
		entries, err := sources.ParseClientConfig([]byte(text), s.sources.Rules)
		var problems validation.Errors
		if errors.As(err, &problems) {
			p.Error = problems["config"]
			return s.renderImport(c, http.StatusUnprocessableEntity, p)
		} else if err != nil {
			return err
		}
		p.Entries = entries
		return s.renderImport(c, http.StatusOK, p)
	}
	res, err := s.sources.Import(c.Request().Context(), orgOf(c).ID, workspaceIDOf(c), actorID(c), []byte(text))
	var problems validation.Errors
	if errors.As(err, &problems) {
		p.Error = problems["config"]
		return s.renderImport(c, http.StatusUnprocessableEntity, p)
	} else if err != nil {
		return err
	}
	p.Entries, p.Result = res.Entries, &res
	return s.renderImport(c, http.StatusOK, p)
}

// sourceJSON is a source in the API; secret-looking values are masked.
type sourceJSON struct {
	ID              string               `json:"id"`
	Name            string               `json:"name"`
	Namespace       string               `json:"namespace"`
	Type            string               `json:"type"`
	Scope           string               `json:"scope"`
	Workspace       *string              `json:"workspace"`
	Enabled         bool                 `json:"enabled"`
	Config          sources.Config       `json:"config"`
	ConfigVersion   int                  `json:"config_version"`
	State           string               `json:"state"`
	Error           string               `json:"error"`
	ToolCount       int                  `json:"tool_count"`
	Warnings        []sources.Warning    `json:"warnings"`
	Quality         *sources.Quality     `json:"quality"`
	AuthProfile     *sources.AuthProfile `json:"auth_profile"`
	SecretKeys      []string             `json:"secret_keys"`
	SpecHash        string               `json:"spec_hash"`
	AuthFingerprint string               `json:"auth_fingerprint"`
	BaseURL         string               `json:"base_url"`
	Server          string               `json:"server"`
	LastRefreshedAt *string              `json:"last_refreshed_at"`
	LastSuccessAt   *string              `json:"last_success_at"`
	LastFailureAt   *string              `json:"last_failure_at"`
	CreatedAt       string               `json:"created_at"`
	UpdatedAt       string               `json:"updated_at"`
	// ApprovalOverride is "auto", "required" or null (each tool's default).
	ApprovalOverride *string `json:"approval_override"`
}

func (s *Server) sourceJSON(src db.Source) (sourceJSON, error) {
	v, err := s.viewOf(src)
	if err != nil {
		return sourceJSON{}, err
	}
	out := sourceJSON{ID: src.ID, Name: src.Name, Namespace: src.Slug, Type: src.Type, Scope: src.Scope, Workspace: src.WorkspaceSlug,
		Enabled: src.Enabled, Config: v.masked, ConfigVersion: src.ConfigVersion, State: src.State, Error: src.Error,
		ToolCount: src.ToolCount, Warnings: []sources.Warning{}, SecretKeys: sources.SecretKeys(v.config), SpecHash: src.SpecHash,
		AuthFingerprint: src.AuthFingerprint, BaseURL: src.BaseURL, Server: src.Server, ApprovalOverride: src.ApprovalOverride,
		LastRefreshedAt: optTime(src.LastRefreshedAt), LastSuccessAt: optTime(src.LastSuccessAt), LastFailureAt: optTime(src.LastFailureAt),
		CreatedAt: src.CreatedAt.UTC().Format(timeFormat), UpdatedAt: src.UpdatedAt.UTC().Format(timeFormat)}
	if out.SecretKeys == nil {
		out.SecretKeys = []string{}
	}
	_ = json.Unmarshal(src.Warnings, &out.Warnings)
	if db.Present(src.Quality) {
		out.Quality = &sources.Quality{}
		_ = json.Unmarshal(src.Quality, out.Quality)
	}
	if db.Present(src.AuthProfile) {
		out.AuthProfile = &sources.AuthProfile{}
		_ = json.Unmarshal(src.AuthProfile, out.AuthProfile)
	}
	return out, nil
}

func (s *Server) writeSource(c echo.Context, status int, src db.Source) error {
	out, err := s.sourceJSON(src)
	if err != nil {
		return err
	}
	return c.JSON(status, out)
}

func (s *Server) apiSources(c echo.Context) error {
	q := c.QueryParams()
	all, err := s.store.Sources(c.Request().Context(), orgOf(c).ID, db.SourceFilter{
		WorkspaceID: workspaceIDOf(c), Query: q.Get("q"), Type: q.Get("type"), State: q.Get("state"), Scope: q.Get("scope"), Sort: q.Get("sort")})
	if err != nil {
		return err
	}
	out := make([]sourceJSON, 0, len(all))
	for _, src := range all {
		j, err := s.sourceJSON(src)
		if err != nil {
			return err
		}
		out = append(out, j)
	}
	return c.JSON(http.StatusOK, list(out))
}

// sourceInputJSON creates a source: the service's input and the
// source's approval override.
type sourceInputJSON struct {
	sources.Input
	ApprovalOverride *string `json:"approval_override"`
}

func (s *Server) apiCreateSource(c echo.Context) error {
	var body sourceInputJSON
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if problems := checkApprovalOverride(body.ApprovalOverride); problems != nil {
		return problems
	}
	in := body.Input
	if workspaceIDOf(c) == nil {
		in.Scope = sources.ScopeOrganization
	}
	in.ActorID = actorID(c)
	src, err := s.sources.Create(c.Request().Context(), orgOf(c).ID, workspaceIDOf(c), in)
	if err != nil {
		return err
	}
	if src, err = s.saveApprovalOverride(c.Request().Context(), src, body.ApprovalOverride); err != nil {
		return err
	}
	return s.writeSource(c, http.StatusCreated, src)
}

func (s *Server) apiSource(c echo.Context) error {
	return s.writeSource(c, http.StatusOK, sourceOf(c))
}

// sourcePatchJSON changes a source: the service's patch, and the
// approval override when sent.
type sourcePatchJSON struct {
	sources.Patch
	ApprovalOverride approvalOverrideJSON `json:"approval_override"`
}

// apiUpdateSource applies a patch. A patch of the approval override alone
// does not rediscover the source's tools.
func (s *Server) apiUpdateSource(c echo.Context) error {
	var body sourcePatchJSON
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if problems := checkApprovalOverride(body.ApprovalOverride.Value); problems != nil {
		return problems
	}
	ctx := c.Request().Context()
	p, src := body.Patch, sourceOf(c)
	p.ActorID = actorID(c)
	var err error
	if p.Name != nil || p.Enabled != nil || len(p.Config) > 0 || !body.ApprovalOverride.Set {
		if src, err = s.sources.Update(ctx, src, p); err != nil {
			return err
		}
	}
	if body.ApprovalOverride.Set {
		if src, err = s.saveApprovalOverride(ctx, src, body.ApprovalOverride.Value); err != nil {
			return err
		}
	}
	return s.writeSource(c, http.StatusOK, src)
}

func (s *Server) apiDeleteSource(c echo.Context) error {
	if err := s.sources.Delete(c.Request().Context(), sourceOf(c), actorID(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiRefreshSource(c echo.Context) error {
	src, err := s.sources.Refresh(c.Request().Context(), sourceOf(c))
	if err != nil {
		return err
	}
	return s.writeSource(c, http.StatusOK, src)
}

func (s *Server) apiTestSavedSource(c echo.Context) error {
	res, err := s.sources.TestSaved(c.Request().Context(), sourceOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, testJSON(res))
}

func (s *Server) apiTestSource(c echo.Context) error {
	var in sources.Input
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.sources.Test(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, testJSON(res))
}

// testResultJSON is a test run in the API, with tools in the API's shape.
type testResultJSON struct {
	sources.TestResult
	Tools []toolJSON `json:"tools"`
}

func testJSON(r sources.TestResult) testResultJSON {
	out := testResultJSON{TestResult: r, Tools: make([]toolJSON, 0, len(r.Tools))}
	for _, t := range r.Tools {
		out.Tools = append(out.Tools, toolJSON{Path: t.Path, Name: t.Name, Aliases: t.Aliases, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: mustJSON(t.Annotations),
			DefaultApproval: string(t.DefaultApproval), Ref: t.Ref})
	}
	return out
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// toolJSON is a tool in the API.
type toolJSON struct {
	Path            string          `json:"path"`
	Name            string          `json:"name"`
	Aliases         []string        `json:"aliases"`
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	SourceID        string          `json:"source_id,omitempty"`
	InputSchema     json.RawMessage `json:"input_schema"`
	OutputSchema    json.RawMessage `json:"output_schema"`
	Annotations     json.RawMessage `json:"annotations"`
	DefaultApproval string          `json:"default_approval"`
	Ref             json.RawMessage `json:"ref"`
}

// apiSourceTools pages through a source's tools: ?limit (max 500) & offset.
func (s *Server) apiSourceTools(c echo.Context) error {
	src := sourceOf(c)
	limit := min(max(atoiOr(c.QueryParam("limit"), 100), 1), 500)
	offset := max(atoiOr(c.QueryParam("offset"), 0), 0)
	tools, err := s.store.Tools(c.Request().Context(), src.OrgID, src.ID, limit, offset)
	if err != nil {
		return err
	}
	out := make([]toolJSON, 0, len(tools))
	for _, t := range tools {
		aliases := []string(t.Aliases)
		if aliases == nil {
			aliases = []string{}
		}
		out = append(out, toolJSON{Path: t.Path, Name: t.Name, Aliases: aliases, Title: t.Title, Description: t.Description, SourceID: t.SourceID,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations, DefaultApproval: t.DefaultApproval, Ref: t.Ref})
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out, "total": src.ToolCount, "limit": limit, "offset": offset})
}

// apiImportSources imports an MCP client configuration: the body is the
// configuration itself; ?dry_run=true previews without creating.
func (s *Server) apiImportSources(c echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	if c.QueryParam("dry_run") == "true" {
		entries, err := sources.ParseClientConfig(body, s.sources.Rules)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, sources.ImportResult{Entries: entries, Created: map[string]string{}})
	}
	res, err := s.sources.Import(c.Request().Context(), orgOf(c).ID, workspaceIDOf(c), actorID(c), body)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if len(res.Created) > 0 {
		status = http.StatusCreated
	}
	return c.JSON(status, res)
}
