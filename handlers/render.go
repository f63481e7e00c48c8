package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/views/layout"
)

// render writes a templ component with a status. Pages vary by HX-Request:
// htmx gets a fragment, anyone else the whole page.
func render(c echo.Context, status int, comp templ.Component) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Add("Vary", "HX-Request")
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response())
}

// page renders the full page for a browser or the fragment for htmx.
func page(c echo.Context, status int, full, fragment templ.Component) error {
	if isHTMX(c) && fragment != nil {
		return render(c, status, fragment)
	}
	return render(c, status, full)
}

// seeOther redirects after a successful POST: HX-Redirect for htmx, 303 for
// everyone else.
func (s *Server) seeOther(c echo.Context, to string) error {
	if isHTMX(c) {
		c.Response().Header().Set("HX-Redirect", to)
		return c.NoContent(http.StatusOK)
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// Session keys of the flash message.
const (
	flashKindKey = "flash_kind"
	flashMsgKey  = "flash_msg"
)

// flash stores a message to show on the next page.
func (s *Server) flash(c echo.Context, kind, msg string) {
	ctx := c.Request().Context()
	s.sessions.Put(ctx, flashKindKey, kind)
	s.sessions.Put(ctx, flashMsgKey, msg)
}

// popFlash takes the pending flash message, if any.
func (s *Server) popFlash(ctx context.Context) *layout.Flash {
	msg := s.sessions.PopString(ctx, flashMsgKey)
	kind := s.sessions.PopString(ctx, flashKindKey)
	if msg == "" {
		return nil
	}
	return &layout.Flash{Kind: kind, Message: msg}
}

// sessionWorkspaceKey remembers the workspace last opened, as "org/ws".
const sessionWorkspaceKey = "workspace"

// meta builds the frame of a page: the user, their organizations, the
// current organization's workspaces and the flash message.
func (s *Server) meta(c echo.Context, title, section string) (layout.Meta, error) {
	ctx := c.Request().Context()
	m := layout.Meta{Title: title, Section: section, CSRF: csrfToken(c)}
	if !hasSession(c) {
		return m, nil
	}
	m.Flash = s.popFlash(ctx)
	u, ok := userOf(c)
	if !ok {
		return m, nil
	}
	m.User = &layout.UserNav{Name: u.Name, Email: u.Email}
	orgs, err := s.store.OrganizationsOf(ctx, u.ID)
	if err != nil {
		return m, err
	}
	for _, o := range orgs {
		m.Orgs = append(m.Orgs, layout.OrgNav{Slug: o.Slug, Name: o.Name, Role: o.Role})
	}
	org := orgOf(c)
	if org.ID == 0 {
		return m, nil
	}
	m.Org = &layout.OrgNav{Slug: org.Slug, Name: org.Name, Role: org.Role}
	wss, err := s.store.Workspaces(ctx, org.ID)
	if err != nil {
		return m, err
	}
	for _, w := range wss {
		m.Workspaces = append(m.Workspaces, layout.WorkspaceNav{Slug: w.Slug, Name: w.Name})
	}
	if w := workspaceOf(c); w.ID != 0 {
		m.Workspace = &layout.WorkspaceNav{Slug: w.Slug, Name: w.Name}
		if m.PendingApprovals, err = s.pendingApprovals(ctx, org.ID, w.ID); err != nil {
			return m, err
		}
		s.sessions.Remember(ctx, sessionWorkspaceKey, org.Slug+"/"+w.Slug)
		return m, nil
	}
	// On organization pages, keep the workspace last opened in this
	// organization selected, so its navigation stays in place.
	if last, ok := strings.CutPrefix(s.sessions.GetString(ctx, sessionWorkspaceKey), org.Slug+"/"); ok {
		for _, w := range m.Workspaces {
			if w.Slug == last {
				m.Workspace = &layout.WorkspaceNav{Slug: w.Slug, Name: w.Name}
			}
		}
	}
	return m, nil
}
