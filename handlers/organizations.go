package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/views/orgs"
	"github.com/toolgate/toolgate/views/paths"
)

func (s *Server) orgsPage(c echo.Context) error {
	m, err := s.meta(c, "Organizations", "orgs")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, orgs.List(orgs.ListPage{Meta: m, Orgs: m.Orgs}))
}

func (s *Server) newOrgPage(c echo.Context) error {
	return s.renderNewOrg(c, http.StatusOK, orgs.NameForm{})
}

func (s *Server) renderNewOrg(c echo.Context, status int, f orgs.NameForm) error {
	m, err := s.meta(c, "New organization", "orgs")
	if err != nil {
		return err
	}
	f.CSRF, f.Action = m.CSRF, paths.Orgs
	return page(c, status, orgs.New(orgs.NewPage{Meta: m, Form: f}), orgs.NameFormFragment(f, "Create organization", false))
}

func (s *Server) createOrg(c echo.Context) error {
	in := tenancy.NameInput{Name: c.FormValue("name"), Slug: c.FormValue("slug")}
	org, err := s.tenancy.CreateOrganization(c.Request().Context(), mustUser(c).ID, in)
	f := orgs.NameForm{Name: in.Name, Slug: in.Slug}
	if errors.As(err, &f.Errors) {
		return s.renderNewOrg(c, http.StatusUnprocessableEntity, f)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Created "+org.Name+" with a Default workspace.")
	return s.seeOther(c, paths.Org(org.Slug))
}

// orgHome remembers the organization and opens its first workspace.
func (s *Server) orgHome(c echo.Context) error {
	ctx := c.Request().Context()
	org := orgOf(c)
	s.sessions.Remember(ctx, sessionOrgKey, org.Slug)
	wss, err := s.store.Workspaces(ctx, org.ID)
	if err != nil {
		return err
	}
	for _, w := range wss {
		if w.Slug == "default" {
			return c.Redirect(http.StatusSeeOther, paths.Workspace(org.Slug, w.Slug))
		}
	}
	if len(wss) > 0 {
		return c.Redirect(http.StatusSeeOther, paths.Workspace(org.Slug, wss[0].Slug))
	}
	return c.Redirect(http.StatusSeeOther, paths.Workspaces(org.Slug))
}

func (s *Server) orgSettingsPage(c echo.Context) error {
	org := orgOf(c)
	return s.renderOrgSettings(c, http.StatusOK, orgs.NameForm{Name: org.Name, Slug: org.Slug})
}

func (s *Server) renderOrgSettings(c echo.Context, status int, f orgs.NameForm) error {
	m, err := s.meta(c, "Organization settings", "org-settings")
	if err != nil {
		return err
	}
	org := orgOf(c)
	f.CSRF, f.Action = m.CSRF, paths.OrgSettings(org.Slug)
	p := orgs.SettingsPage{Meta: m, Form: f, Leave: paths.Org(org.Slug) + "/leave", CanEdit: roleOf(c).AtLeast(auth.Admin)}
	return page(c, status, orgs.Settings(p), orgs.NameFormFragment(f, "Save", true))
}

func (s *Server) updateOrg(c echo.Context) error {
	in := tenancy.NameInput{Name: c.FormValue("name"), Slug: c.FormValue("slug")}
	org, err := s.tenancy.UpdateOrganization(c.Request().Context(), orgOf(c).ID, actorID(c), in)
	f := orgs.NameForm{Name: in.Name, Slug: in.Slug}
	if errors.As(err, &f.Errors) {
		return s.renderOrgSettings(c, http.StatusUnprocessableEntity, f)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Organization saved.")
	return s.seeOther(c, paths.OrgSettings(org.Slug))
}

func (s *Server) leaveOrg(c echo.Context) error {
	u, org := mustUser(c), orgOf(c)
	if err := s.tenancy.RemoveMember(c.Request().Context(), org.ID, u, roleOf(c), u.ID); errors.Is(err, tenancy.ErrLastOwner) {
		s.flash(c, "error", "You are the last owner of "+org.Name+": make someone else owner before leaving.")
		return s.seeOther(c, paths.OrgSettings(org.Slug))
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "You left "+org.Name+".")
	return s.seeOther(c, paths.Home)
}

// orgJSON is an organization in the API, with the caller's role.
type orgJSON struct {
	ID        int64  `json:"id"`
	Slug      string `json:"slug"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func toOrgJSON(o db.Organization, role string) orgJSON {
	return orgJSON{ID: o.ID, Slug: o.Slug, Name: o.Name, Role: role,
		CreatedAt: o.CreatedAt.UTC().Format(timeFormat), UpdatedAt: o.UpdatedAt.UTC().Format(timeFormat)}
}

func (s *Server) apiOrgs(c echo.Context) error {
	all, err := s.store.OrganizationsOf(c.Request().Context(), mustUser(c).ID)
	if err != nil {
		return err
	}
	out := make([]orgJSON, 0, len(all))
	for _, o := range all {
		out = append(out, toOrgJSON(o.Organization, o.Role))
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiCreateOrg(c echo.Context) error {
	var in tenancy.NameInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	org, err := s.tenancy.CreateOrganization(c.Request().Context(), mustUser(c).ID, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toOrgJSON(org, string(auth.Owner)))
}

func (s *Server) apiOrg(c echo.Context) error {
	o := orgOf(c)
	return c.JSON(http.StatusOK, toOrgJSON(o.Organization, o.Role))
}

func (s *Server) apiUpdateOrg(c echo.Context) error {
	o := orgOf(c)
	var body struct {
		Name *string `json:"name"`
		Slug *string `json:"slug"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	in := tenancy.NameInput{Name: o.Name, Slug: o.Slug}
	if body.Name != nil {
		in.Name = *body.Name
	}
	if body.Slug != nil {
		in.Slug = *body.Slug
	}
	org, err := s.tenancy.UpdateOrganization(c.Request().Context(), o.ID, actorID(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toOrgJSON(org, o.Role))
}
