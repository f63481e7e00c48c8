package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/sources"
	viewcreds "github.com/toolgate/toolgate/views/credentials"
	"github.com/toolgate/toolgate/views/paths"
	"github.com/toolgate/toolgate/views/ui"
)

// ctxMine marks the routes of the user's own credentials (/settings and
// /api/v1/me), where loadMyCredential chose the organization.
const ctxMine = "toolgate.mine"

// isMine reports whether the route addresses the user's own credentials:
// the /settings and /api/v1/me routes, which have no organization of their
// own until loadMyCredential sets the credential's.
func isMine(c echo.Context) bool { return c.Get(ctxMine) == true || orgOf(c).ID == 0 }

// placeOf is where the route addresses credentials: its organization, and
// its workspace on workspace routes.
func placeOf(c echo.Context) credentials.Place {
	return credentials.Place{OrgID: orgOf(c).ID, WorkspaceID: workspaceIDOf(c)}
}

// actorOf is the caller with their role in the route's organization.
func actorOf(c echo.Context) credentials.Actor {
	return credentials.Actor{UserID: mustUser(c).ID, Role: roleOf(c)}
}

// loadMyCredential resolves :id among the user's own credentials and makes
// its organization the route's, so the handlers shared with the workspace
// and organization routes address it there. Anything else is 404.
func (s *Server) loadMyCredential(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		u := mustUser(c)
		mine, err := s.creds.Mine(ctx, u.ID)
		if err != nil {
			return err
		}
		for _, cr := range mine {
			if cr.ID != c.Param("id") {
				continue
			}
			o, err := s.store.OrganizationOf(ctx, u.ID, cr.OrgSlug)
			if err != nil {
				return err
			}
			c.Set(ctxOrg, o)
			c.Set(ctxMine, true)
			return next(c)
		}
		return db.ErrNotFound
	}
}

// credentialsURL is the list the route belongs to.
func credentialsURL(c echo.Context) string {
	switch {
	case isMine(c):
		return paths.MyCredentials
	case workspaceOf(c).ID != 0:
		return paths.WorkspaceCredentials(orgOf(c).Slug, workspaceOf(c).Slug)
	}
	return paths.OrgCredentials(orgOf(c).Slug)
}

// credentialsSection is the sidebar entry of the route's list.
func credentialsSection(c echo.Context) string {
	switch {
	case isMine(c):
		return "my-credentials"
	case workspaceOf(c).ID != 0:
		return "credentials"
	}
	return "org-credentials"
}

// authProfileOf decodes a source's inferred auth profile, if any.
func authProfileOf(src db.Source) *sources.AuthProfile {
	if !db.Present(src.AuthProfile) {
		return nil
	}
	p := &sources.AuthProfile{}
	if json.Unmarshal(src.AuthProfile, p) != nil {
		return nil
	}
	return p
}

// profileSentence says what a source expects, for the create form.
func profileSentence(p *sources.AuthProfile, stdio bool) string {
	if stdio {
		return "This server runs as a local process: give its secrets as environment variables (custom headers, whose names become variable names)."
	}
	if p == nil {
		return ""
	}
	var out string
	switch p.Type {
	case "apiKey":
		switch p.In {
		case "query":
			out = "This API expects the key in the " + p.Name + " query parameter."
		case "cookie":
			out = "This API expects the key in the " + p.Name + " cookie: send it as a Cookie header."
		default:
			out = "This API expects " + p.Name + " in a header."
		}
	case "bearer":
		out = "This API expects a bearer token in the Authorization header."
	case "basic":
		out = "This API expects a username and password (basic authentication)."
	case "none":
		out = "This API needs no authentication."
	case "oauth2":
		out = "This API uses OAuth 2: paste an access token; it is sent as a bearer token."
	default:
		out = "This API expects " + p.Type + " authentication."
	}
	if p.Note != "" {
		out += " " + p.Note
	}
	return out
}

// ---- Console: lists ----

func (s *Server) credentialsPage(c echo.Context) error {
	ctx := c.Request().Context()
	f := viewcreds.Filter{Scope: c.QueryParam("scope"), SourceID: c.QueryParam("source_id")}
	if !credentials.Scope(f.Scope).Valid() {
		f.Scope = ""
	}
	list, err := s.creds.List(ctx, placeOf(c), actorOf(c), credentials.Scope(f.Scope), f.SourceID)
	if err != nil {
		return err
	}
	title, lead := "Credentials", "The secrets this workspace's sources use: yours first, then the workspace's, then the organization's. Values are encrypted and never shown again."
	if workspaceOf(c).ID == 0 {
		title, lead = "Organization credentials", "Credentials of the organization and of every workspace, and your own. Values are encrypted and never shown again."
	}
	m, err := s.meta(c, title, credentialsSection(c))
	if err != nil {
		return err
	}
	p := viewcreds.ListPage{Meta: m, Title: title, Lead: lead, FilterURL: credentialsURL(c), Filter: f,
		ReadOnly:   !roleOf(c).AtLeast(auth.Member),
		EmptyTitle: "No credentials yet",
		EmptyText:  "A source that needs a token, key or password gets it from a credential. Add one for yourself, or, as an owner or admin, for everyone here."}
	if roleOf(c).AtLeast(auth.Member) {
		p.NewURL = credentialsURL(c) + "/new"
	}
	// The source filter offers the sources that have credentials here.
	all := list
	if f.Active() {
		if all, err = s.creds.List(ctx, placeOf(c), actorOf(c), "", ""); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, cr := range all {
		if !seen[cr.SourceID] {
			seen[cr.SourceID] = true
			p.Sources = append(p.Sources, ui.Option{Value: cr.SourceID, Label: cr.SourceName})
		}
	}
	link, name := s.sourceLinker(c), s.namer(ctx)
	for _, cr := range list {
		p.Rows = append(p.Rows, rowOf(cr, roleOf(c), paths.Credential(credentialsURL(c), cr.ID), link(ctx, cr), name))
	}
	return render(c, http.StatusOK, viewcreds.List(p))
}

func (s *Server) myCredentialsPage(c echo.Context) error {
	ctx := c.Request().Context()
	u := mustUser(c)
	mine, err := s.creds.Mine(ctx, u.ID)
	if err != nil {
		return err
	}
	m, err := s.meta(c, "My credentials", "my-credentials")
	if err != nil {
		return err
	}
	p := viewcreds.ListPage{Meta: m, Title: "My credentials", Mine: true, NewURL: paths.MyCredentials + "/new",
		Lead:       "Your own secrets for sources of your organizations. Calls you make use them before the workspace's or the organization's; nobody else's calls ever do.",
		EmptyTitle: "You have no credentials of your own",
		EmptyText:  "Keep your own token or key for a source here, so calls made as you act as you upstream."}
	roles, err := s.rolesOf(ctx, u.ID)
	if err != nil {
		return err
	}
	link, name := s.sourceLinker(c), s.namer(ctx)
	for _, cr := range mine {
		r := rowOf(cr, roles[cr.OrgID], paths.Credential(paths.MyCredentials, cr.ID), link(ctx, cr), name)
		r.Org = cr.OrgSlug
		p.Rows = append(p.Rows, r)
	}
	return render(c, http.StatusOK, viewcreds.List(p))
}

// rolesOf maps the user's organizations to their role there.
func (s *Server) rolesOf(ctx context.Context, userID int64) (map[int64]auth.Role, error) {
	orgs, err := s.store.OrganizationsOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := map[int64]auth.Role{}
	for _, o := range orgs {
		out[o.ID] = auth.Role(o.Role)
	}
	return out, nil
}

// sourceLinker links credentials to their source's page: in its own
// workspace, or for an organization source in the workspace at hand (else
// the organization's first).
func (s *Server) sourceLinker(c echo.Context) func(context.Context, db.Credential) string {
	here := ""
	if w := workspaceOf(c); w.ID != 0 {
		here = w.Slug
	}
	first := map[int64]string{}
	return func(ctx context.Context, cr db.Credential) string {
		switch {
		case cr.SourceWorkspaceSlug != nil:
			return paths.WorkspaceSource(cr.OrgSlug, *cr.SourceWorkspaceSlug, cr.SourceID)
		case here != "" && cr.OrgID == orgOf(c).ID:
			return paths.WorkspaceSource(cr.OrgSlug, here, cr.SourceID)
		}
		ws, ok := first[cr.OrgID]
		if !ok {
			if all, err := s.store.Workspaces(ctx, cr.OrgID); err == nil && len(all) > 0 {
				ws = all[0].Slug
			}
			first[cr.OrgID] = ws
		}
		if ws == "" {
			return ""
		}
		return paths.WorkspaceSource(cr.OrgSlug, ws, cr.SourceID)
	}
}

// namer names the people who created and changed credentials: their
// name, else their email; empty for someone no longer here.
func (s *Server) namer(ctx context.Context) func(id *int64, name *string) string {
	emails := map[int64]string{}
	return func(id *int64, name *string) string {
		switch {
		case name != nil && *name != "":
			return *name
		case id == nil:
			return ""
		}
		email, ok := emails[*id]
		if !ok {
			if u, err := s.store.UserByID(ctx, *id); err == nil {
				email = u.Email
			}
			emails[*id] = email
		}
		return email
	}
}

// rowOf is a credential's metadata for a page.
func rowOf(cr db.Credential, role auth.Role, url, sourceURL string, name func(*int64, *string) string) viewcreds.Row {
	a := credentials.AuthOf(cr)
	r := viewcreds.Row{ID: cr.ID, URL: url, SourceID: cr.SourceID, SourceName: cr.SourceName, SourceSlug: cr.SourceSlug,
		SourceType: cr.SourceType, SourceURL: sourceURL, Scope: cr.Scope, ScopeLabel: credentials.Scope(cr.Scope).Label(),
		Type: string(a.Type), TypeLabel: a.Type.Label(), Auth: a.Describe(), Hint: cr.Hint,
		CreatedBy: name(cr.CreatedBy, cr.CreatedByName), CreatedAt: cr.CreatedAt, UpdatedBy: name(cr.UpdatedBy, cr.UpdatedByName), UpdatedAt: cr.UpdatedAt,
		LastUsedAt: cr.LastUsedAt, CanManage: credentials.MayManage(role, credentials.Scope(cr.Scope))}
	switch credentials.Scope(cr.Scope) {
	case credentials.ScopeAccount:
		r.Holder = "Yours only"
	case credentials.ScopeWorkspace:
		r.Holder = "Workspace " + deref(cr.WorkspaceName)
	default:
		r.Holder = "The whole organization"
	}
	return r
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ---- Console: create ----

// newCredentialPage shows the create form; ?source= (or source_id) picks
// the source and fills in what its auth profile expects, with or without
// JavaScript.
func (s *Server) newCredentialPage(c echo.Context) error {
	id := c.QueryParam("source")
	if id == "" {
		id = c.QueryParam("source_id")
	}
	f := viewcreds.Form{SourceID: strings.TrimSpace(id), Scope: c.QueryParam("scope")}
	return s.renderCredentialForm(c, http.StatusOK, f, true)
}

// credentialChoices lists the sources a credential can be created for
// here: a workspace's own and its organization's; the organization's; or,
// on My credentials, those of every organization where the user is at
// least a member.
func (s *Server) credentialChoices(c echo.Context) ([]viewcreds.SourceChoice, map[string]db.Source, error) {
	ctx := c.Request().Context()
	byID := map[string]db.Source{}
	var out []viewcreds.SourceChoice
	add := func(src db.Source, group string) {
		if _, dup := byID[src.ID]; dup {
			return
		}
		byID[src.ID] = src
		label := src.Name + " (" + viewcreds.TypeLabel(src.Type)
		if src.WorkspaceSlug != nil {
			label += ", workspace " + *src.WorkspaceSlug
		}
		out = append(out, viewcreds.SourceChoice{ID: src.ID, Label: label + ")", Group: group})
	}
	if !isMine(c) {
		srcs, err := s.store.Sources(ctx, orgOf(c).ID, db.SourceFilter{WorkspaceID: workspaceIDOf(c)})
		for _, src := range srcs {
			add(src, "")
		}
		return out, byID, err
	}
	orgs, err := s.store.OrganizationsOf(ctx, mustUser(c).ID)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range orgs {
		if !auth.Role(o.Role).AtLeast(auth.Member) {
			continue
		}
		wss, err := s.store.Workspaces(ctx, o.ID)
		if err != nil {
			return nil, nil, err
		}
		filters := []db.SourceFilter{{}}
		for _, w := range wss {
			filters = append(filters, db.SourceFilter{WorkspaceID: &w.ID})
		}
		for _, sf := range filters {
			srcs, err := s.store.Sources(ctx, o.ID, sf)
			if err != nil {
				return nil, nil, err
			}
			for _, src := range srcs {
				add(src, o.Name)
			}
		}
	}
	return out, byID, nil
}

// scopeChoices are the scopes the caller may create here, the default first.
func scopeChoices(c echo.Context) []ui.Option {
	mine := ui.Option{Value: string(credentials.ScopeAccount), Label: "Yours only (account)"}
	switch {
	case isMine(c):
		return []ui.Option{mine}
	case !roleOf(c).AtLeast(auth.Admin):
		return []ui.Option{mine}
	case workspaceOf(c).ID != 0:
		return []ui.Option{{Value: string(credentials.ScopeWorkspace), Label: "This workspace"},
			{Value: string(credentials.ScopeOrganization), Label: "The whole organization"}, mine}
	}
	return []ui.Option{{Value: string(credentials.ScopeOrganization), Label: "The whole organization"}, mine}
}

// renderCredentialForm renders the create page, or for htmx the form.
// With prefill, the chosen source's auth profile sets the type and its
// parameters.
func (s *Server) renderCredentialForm(c echo.Context, status int, f viewcreds.Form, prefill bool) error {
	title := "New credential"
	if isMine(c) {
		title = "New credential of your own"
	}
	m, err := s.meta(c, title, credentialsSection(c))
	if err != nil {
		return err
	}
	choices, byID, err := s.credentialChoices(c)
	if err != nil {
		return err
	}
	f.ID, f.CSRF, f.Action, f.RefillURL = viewcreds.FormID, m.CSRF, credentialsURL(c), credentialsURL(c)+"/new"
	f.Sources, f.Scopes = choices, scopeChoices(c)
	if !scopeOffered(f.Scopes, f.Scope) {
		f.Scope = f.Scopes[0].Value
	}
	src, chosen := byID[f.SourceID]
	if chosen {
		f.Stdio = credentials.IsStdio(src)
		profile := authProfileOf(src)
		f.Profile = profileSentence(profile, f.Stdio)
		if prefill {
			a := credentials.ProfileAuth(profile)
			if f.Stdio {
				a = credentials.Auth{Type: credentials.TypeHeaders}
			}
			fillForm(&f, a)
		}
	}
	if f.Type == "" {
		f.Type = string(credentials.TypeBearer)
	}
	p := viewcreds.NewPage{Meta: m, Title: title, ListURL: credentialsURL(c), Form: f, NoSources: len(choices) == 0}
	if workspaceOf(c).ID != 0 {
		p.SourcesURL = sourcesURL(c)
	}
	return page(c, status, viewcreds.New(p), viewcreds.FormFragment(f))
}

func scopeOffered(opts []ui.Option, v string) bool {
	for _, o := range opts {
		if o.Value == v {
			return true
		}
	}
	return false
}

// fillForm sets a form's type and parameters from stored or inferred auth.
func fillForm(f *viewcreds.Form, a credentials.Auth) {
	f.Type = string(a.Type)
	f.BearerHeader, f.BearerScheme = a.Header, a.Scheme
	f.KeyIn, f.KeyName = a.In, a.Name
	f.Username = a.Username
	f.HeaderNames = append([]string(nil), a.Headers...)
}

// credentialForm reads the console's credential form: the type and its
// parameters into the view's state (which has no place for secrets), and
// the secret of that type into the service's input. With required false
// (editing), empty secret fields mean "keep the stored value" (nil).
func credentialForm(c echo.Context, required bool) (viewcreds.Form, credentials.Auth, *credentials.Secret) {
	f := viewcreds.Form{SourceID: strings.TrimSpace(c.FormValue("source_id")), Scope: c.FormValue("scope"), Type: c.FormValue("type"),
		BearerHeader: c.FormValue("bearer_header"), BearerScheme: c.FormValue("bearer_scheme"),
		KeyIn: c.FormValue("key_in"), KeyName: c.FormValue("key_name"), Username: c.FormValue("username")}
	a := credentials.Auth{Type: credentials.Type(f.Type)}
	switch a.Type {
	case credentials.TypeBearer:
		a.Header, a.Scheme = f.BearerHeader, f.BearerScheme
	case credentials.TypeAPIKey:
		a.In, a.Name = f.KeyIn, f.KeyName
	case credentials.TypeBasic:
		a.Username = f.Username
	}
	return f, a, secretOf(c, a.Type, &f, required)
}

// secretOf reads the secret fields of one auth type. The header names go
// to the form (to show again); no value does.
func secretOf(c echo.Context, typ credentials.Type, f *viewcreds.Form, required bool) *credentials.Secret {
	one := func(field string) *credentials.Secret {
		v := c.FormValue(field)
		if v == "" && !required {
			return nil
		}
		return &credentials.Secret{Value: v}
	}
	switch typ {
	case credentials.TypeBearer:
		return one("bearer_token")
	case credentials.TypeAPIKey:
		return one("key_value")
	case credentials.TypeBasic:
		v := c.FormValue("password")
		if v == "" && !required {
			return nil
		}
		return &credentials.Secret{Password: v}
	case credentials.TypeHeaders:
		form, _ := c.FormParams()
		names, values := form["header_name"], form["header_value"]
		pairs, given := map[string]string{}, false
		for i, name := range names {
			name = strings.TrimSpace(name)
			v := ""
			if i < len(values) {
				v = values[i]
			}
			if name == "" && v == "" {
				continue
			}
			f.HeaderNames = append(f.HeaderNames, name)
			pairs[name] = v
			given = given || v != ""
		}
		if !given && !required {
			return nil
		}
		return &credentials.Secret{Headers: pairs}
	}
	return nil
}

func (s *Server) createCredential(c echo.Context) error {
	f, a, sec := credentialForm(c, true)
	if c.FormValue("step") == "prefill" {
		// The form without JavaScript asks to fill in from the chosen
		// source; whatever else was typed, secrets first, is dropped.
		return s.renderCredentialForm(c, http.StatusOK, viewcreds.Form{SourceID: f.SourceID, Scope: f.Scope}, true)
	}
	in := credentials.Input{SourceID: f.SourceID, Scope: credentials.Scope(f.Scope), Auth: a, Secret: sec}
	ctx := c.Request().Context()
	var (
		cred db.Credential
		err  error
	)
	if isMine(c) {
		cred, err = s.creds.CreateForMe(ctx, mustUser(c).ID, in)
	} else {
		cred, err = s.creds.Create(ctx, placeOf(c), actorOf(c), in)
	}
	if errors.As(err, &f.Errors) {
		return s.renderCredentialForm(c, http.StatusUnprocessableEntity, f, false)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Saved the credential for "+cred.SourceName+". Its value is encrypted and will not be shown again; the source is being refreshed with it.")
	return s.seeOther(c, paths.Credential(credentialsURL(c), cred.ID))
}

// ---- Console: one credential ----

func (s *Server) credentialPage(c echo.Context) error {
	cred, err := s.creds.Get(c.Request().Context(), placeOf(c), actorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	p, err := s.credentialDetail(c, cred)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, viewcreds.Detail(p))
}

// credentialDetail builds a credential's page with its forms at rest.
func (s *Server) credentialDetail(c echo.Context, cred db.Credential) (viewcreds.DetailPage, error) {
	ctx := c.Request().Context()
	m, err := s.meta(c, "Credential for "+cred.SourceName, credentialsSection(c))
	if err != nil {
		return viewcreds.DetailPage{}, err
	}
	src, err := s.store.Source(ctx, cred.OrgID, cred.SourceID)
	if err != nil {
		return viewcreds.DetailPage{}, err
	}
	url := paths.Credential(credentialsURL(c), cred.ID)
	a := credentials.AuthOf(cred)
	p := viewcreds.DetailPage{Meta: m, CSRF: m.CSRF, ListURL: credentialsURL(c),
		Credential: rowOf(cred, roleOf(c), url, s.sourceLinker(c)(ctx, cred), s.namer(ctx))}
	switch credentialsSection(c) {
	case "my-credentials":
		p.ListLabel = "My credentials"
	case "org-credentials":
		p.ListLabel = "Organization credentials"
	default:
		p.ListLabel = "Credentials"
	}
	stdio := credentials.IsStdio(src)
	p.Replace = viewcreds.Form{ID: viewcreds.ReplaceFormID, CSRF: m.CSRF, Action: url + "/secret", SecretOnly: true, Stdio: stdio}
	fillForm(&p.Replace, a)
	p.Edit = viewcreds.Form{ID: viewcreds.EditFormID, CSRF: m.CSRF, Action: url, Editing: true, Stdio: stdio}
	fillForm(&p.Edit, a)
	return p, nil
}

// credentialFormError answers a refused Edit or Replace: the form alone
// for htmx, else the whole page with the form in its state.
func (s *Server) credentialFormError(c echo.Context, cred db.Credential, f viewcreds.Form) error {
	p, err := s.credentialDetail(c, cred)
	if err != nil {
		return err
	}
	if f.SecretOnly {
		f.ID, f.CSRF, f.Action, f.Stdio = p.Replace.ID, p.CSRF, p.Replace.Action, p.Replace.Stdio
		f.Type = p.Replace.Type
		if len(f.HeaderNames) == 0 {
			f.HeaderNames = p.Replace.HeaderNames
		}
		p.Replace = f
	} else {
		f.ID, f.CSRF, f.Action, f.Stdio, f.Editing = p.Edit.ID, p.CSRF, p.Edit.Action, p.Edit.Stdio, true
		p.Edit = f
	}
	return page(c, http.StatusUnprocessableEntity, viewcreds.Detail(p), viewcreds.FormFragment(f))
}

// updateCredential saves the Edit form: new parameters, and a new value
// when one is given.
func (s *Server) updateCredential(c echo.Context) error {
	ctx := c.Request().Context()
	cred, err := s.creds.Get(ctx, placeOf(c), actorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	f, a, sec := credentialForm(c, false)
	updated, err := s.creds.Update(ctx, placeOf(c), actorOf(c), cred.ID, credentials.Patch{Auth: &a, Secret: sec})
	if errors.As(err, &f.Errors) {
		return s.credentialFormError(c, cred, f)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Saved the credential for "+updated.SourceName+"; the source is being refreshed with it.")
	return s.seeOther(c, paths.Credential(credentialsURL(c), cred.ID))
}

// replaceCredentialSecret saves the Replace form: a new value, same type.
func (s *Server) replaceCredentialSecret(c echo.Context) error {
	ctx := c.Request().Context()
	cred, err := s.creds.Get(ctx, placeOf(c), actorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	f := viewcreds.Form{SecretOnly: true}
	sec := secretOf(c, credentials.AuthOf(cred).Type, &f, true)
	updated, err := s.creds.Update(ctx, placeOf(c), actorOf(c), cred.ID, credentials.Patch{Secret: sec})
	if errors.As(err, &f.Errors) {
		return s.credentialFormError(c, cred, f)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Replaced the value of the credential for "+updated.SourceName+"; the old one is gone.")
	return s.seeOther(c, paths.Credential(credentialsURL(c), cred.ID))
}

func (s *Server) deleteCredential(c echo.Context) error {
	ctx := c.Request().Context()
	cred, err := s.creds.Get(ctx, placeOf(c), actorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	if !credentials.MayManage(roleOf(c), credentials.Scope(cred.Scope)) {
		return auth.ErrForbidden
	}
	if c.FormValue("confirm") != "yes" {
		p, err := s.credentialDetail(c, cred)
		if err != nil {
			return err
		}
		p.DeleteError = "Tick the box to confirm."
		return render(c, http.StatusUnprocessableEntity, viewcreds.Detail(p))
	}
	if err := s.creds.Delete(ctx, placeOf(c), actorOf(c), cred.ID); err != nil {
		return err
	}
	s.flash(c, "success", "Deleted the credential for "+cred.SourceName+".")
	return s.seeOther(c, credentialsURL(c))
}

// testCredential runs the source's discovery with the credential: the
// result panel for htmx, else the page with it.
func (s *Server) testCredential(c echo.Context) error {
	ctx := c.Request().Context()
	res, err := s.creds.Test(ctx, placeOf(c), actorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	t := viewcreds.TestResult{ToolCount: res.ToolCount, LatencyMS: res.LatencyMS, Server: res.Server, Error: res.Error}
	if isHTMX(c) {
		return render(c, http.StatusOK, viewcreds.Test(t))
	}
	cred, err := s.creds.Get(ctx, placeOf(c), actorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	p, err := s.credentialDetail(c, cred)
	if err != nil {
		return err
	}
	p.Test = &t
	return render(c, http.StatusOK, viewcreds.Detail(p))
}

// ---- JSON API ----

// credentialJSON is a credential in the API: metadata only. The sealed
// value never leaves the server, and nothing here is built from it.
type credentialJSON struct {
	ID          string             `json:"id"`
	SourceID    string             `json:"source_id"`
	Binding     string             `json:"binding"`
	Scope       string             `json:"scope"`
	Auth        credentialAuthJSON `json:"auth"`
	Hint        string             `json:"hint"`
	CreatedAt   string             `json:"created_at"`
	UpdatedAt   string             `json:"updated_at"`
	LastUsedAt  *string            `json:"last_used_at"`
	Description string             `json:"description"`
	// Organization is the organization's URL name.
	Organization string `json:"organization"`
	// Workspace holds a workspace credential (its URL name), else null.
	Workspace       *string `json:"workspace"`
	SourceName      string  `json:"source_name"`
	SourceNamespace string  `json:"source_namespace"`
	SourceType      string  `json:"source_type"`
	SourceWorkspace *string `json:"source_workspace"`
	CreatedBy       *string `json:"created_by"`
	UpdatedBy       *string `json:"updated_by"`
}

// credentialAuthJSON is a credential's type and parameters; every key is
// present, empty when the type has no use for it.
type credentialAuthJSON struct {
	Type     string   `json:"type"`
	Header   string   `json:"header"`
	Scheme   string   `json:"scheme"`
	In       string   `json:"in"`
	Name     string   `json:"name"`
	Username string   `json:"username"`
	Headers  []string `json:"headers"`
}

func credentialJSONOf(cr db.Credential) credentialJSON {
	a := credentials.AuthOf(cr)
	headers := a.Headers
	if headers == nil {
		headers = []string{}
	}
	return credentialJSON{ID: cr.ID, SourceID: cr.SourceID, Binding: "source:" + cr.SourceID, Scope: cr.Scope,
		Auth: credentialAuthJSON{Type: string(a.Type), Header: a.Header, Scheme: a.Scheme, In: a.In, Name: a.Name, Username: a.Username, Headers: headers},
		Hint: cr.Hint, CreatedAt: cr.CreatedAt.UTC().Format(timeFormat), UpdatedAt: cr.UpdatedAt.UTC().Format(timeFormat),
		LastUsedAt: optTime(cr.LastUsedAt), Description: a.Describe(), Organization: cr.OrgSlug, Workspace: cr.WorkspaceSlug,
		SourceName: cr.SourceName, SourceNamespace: cr.SourceSlug, SourceType: cr.SourceType, SourceWorkspace: cr.SourceWorkspaceSlug,
		CreatedBy: cr.CreatedByName, UpdatedBy: cr.UpdatedByName}
}

func credentialsJSON(all []db.Credential) map[string][]credentialJSON {
	out := make([]credentialJSON, 0, len(all))
	for _, cr := range all {
		out = append(out, credentialJSONOf(cr))
	}
	return list(out)
}

// apiCredentials lists the credentials the caller sees here:
// ?scope= and ?source_id= narrow the list.
func (s *Server) apiCredentials(c echo.Context) error {
	all, err := s.creds.List(c.Request().Context(), placeOf(c), actorOf(c), credentials.Scope(c.QueryParam("scope")), c.QueryParam("source_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, credentialsJSON(all))
}

func (s *Server) apiCreateCredential(c echo.Context) error {
	var in credentials.Input
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	cred, err := s.creds.Create(c.Request().Context(), placeOf(c), actorOf(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, credentialJSONOf(cred))
}

// apiMyCredentials lists the caller's own credentials in every
// organization; ?source_id= narrows the list.
func (s *Server) apiMyCredentials(c echo.Context) error {
	mine, err := s.creds.Mine(c.Request().Context(), mustUser(c).ID)
	if err != nil {
		return err
	}
	if id := c.QueryParam("source_id"); id != "" {
		kept := mine[:0]
		for _, cr := range mine {
			if cr.SourceID == id {
				kept = append(kept, cr)
			}
		}
		mine = kept
	}
	return c.JSON(http.StatusOK, credentialsJSON(mine))
}

func (s *Server) apiCreateMyCredential(c echo.Context) error {
	var in credentials.Input
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	cred, err := s.creds.CreateForMe(c.Request().Context(), mustUser(c).ID, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, credentialJSONOf(cred))
}

func (s *Server) apiCredential(c echo.Context) error {
	cred, err := s.creds.Get(c.Request().Context(), placeOf(c), actorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, credentialJSONOf(cred))
}

func (s *Server) apiUpdateCredential(c echo.Context) error {
	var p credentials.Patch
	if err := decodeJSON(c, &p); err != nil {
		return err
	}
	cred, err := s.creds.Update(c.Request().Context(), placeOf(c), actorOf(c), c.Param("id"), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, credentialJSONOf(cred))
}

func (s *Server) apiDeleteCredential(c echo.Context) error {
	if err := s.creds.Delete(c.Request().Context(), placeOf(c), actorOf(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiTestCredential(c echo.Context) error {
	res, err := s.creds.Test(c.Request().Context(), placeOf(c), actorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, testJSON(res))
}
