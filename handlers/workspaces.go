package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/paths"
	"github.com/toolgate/toolgate/views/workspaces"
)

func (s *Server) workspacesPage(c echo.Context) error {
	m, err := s.meta(c, "Workspaces", "workspaces")
	if err != nil {
		return err
	}
	all, err := s.store.Workspaces(c.Request().Context(), orgOf(c).ID)
	if err != nil {
		return err
	}
	p := workspaces.ListPage{Meta: m}
	for _, w := range all {
		p.Workspaces = append(p.Workspaces, workspaces.Row{Slug: w.Slug, Name: w.Name, CreatedAt: w.CreatedAt})
	}
	return render(c, http.StatusOK, workspaces.List(p))
}

func (s *Server) newWorkspacePage(c echo.Context) error {
	return s.renderNewWorkspace(c, http.StatusOK, workspaces.Form{})
}

func (s *Server) renderNewWorkspace(c echo.Context, status int, f workspaces.Form) error {
	m, err := s.meta(c, "New workspace", "workspaces")
	if err != nil {
		return err
	}
	f.CSRF, f.Action = m.CSRF, paths.Workspaces(orgOf(c).Slug)
	return page(c, status, workspaces.New(workspaces.NewPage{Meta: m, Form: f}), workspaces.FormFragment(f, "Create workspace", false))
}

func (s *Server) createWorkspace(c echo.Context) error {
	org := orgOf(c)
	in := tenancy.NameInput{Name: c.FormValue("name"), Slug: c.FormValue("slug")}
	w, err := s.tenancy.CreateWorkspace(c.Request().Context(), org.ID, actorID(c), in)
	f := workspaces.Form{Name: in.Name, Slug: in.Slug}
	if errors.As(err, &f.Errors) {
		return s.renderNewWorkspace(c, http.StatusUnprocessableEntity, f)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Created workspace "+w.Name+".")
	return s.seeOther(c, paths.Workspace(org.Slug, w.Slug))
}

// comingSoon answers the workspace sections later parts build.
func (s *Server) comingSoon(c echo.Context) error {
	section, ok := layout.SectionByKey(c.Param("section"))
	if !ok {
		return db.ErrNotFound
	}
	m, err := s.meta(c, section.Label, section.Key)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, workspaces.Soon(workspaces.SoonPage{Meta: m, Title: section.Label, What: workspaces.SectionBlurbs[section.Key]}))
}

func (s *Server) workspaceSettingsPage(c echo.Context) error {
	w := workspaceOf(c)
	return s.renderWorkspaceSettings(c, http.StatusOK, workspaces.Form{Name: w.Name, Slug: w.Slug}, workspaces.DeleteForm{}, approverInput{})
}

// renderWorkspaceSettings renders the settings page. A failed delete
// (del.Confirm set) or approver addition (appr.Error set) answers htmx
// with its own form; anything else with the name form.
func (s *Server) renderWorkspaceSettings(c echo.Context, status int, f workspaces.Form, del workspaces.DeleteForm, appr approverInput) error {
	m, err := s.meta(c, "Workspace settings", "workspace-settings")
	if err != nil {
		return err
	}
	org, w := orgOf(c), workspaceOf(c)
	f.CSRF, f.Action = m.CSRF, paths.WorkspaceSettings(org.Slug, w.Slug)
	del.CSRF, del.Action, del.Slug = m.CSRF, paths.Workspace(org.Slug, w.Slug)+"/delete", w.Slug
	p := workspaces.SettingsPage{Meta: m, Form: f, Delete: del, CanEdit: roleOf(c).AtLeast(auth.Admin)}
	if p.CanEdit {
		if p.Approvers, err = s.approversSection(c, appr); err != nil {
			return err
		}
	}
	fragment := workspaces.FormFragment(f, "Save", true)
	switch {
	case del.Error != "":
		fragment = workspaces.DeleteFragment(del)
	case appr.Error != "" && p.Approvers != nil:
		fragment = workspaces.ApproversSection(*p.Approvers)
	}
	return page(c, status, workspaces.Settings(p), fragment)
}

func (s *Server) updateWorkspace(c echo.Context) error {
	org, cur := orgOf(c), workspaceOf(c)
	in := tenancy.NameInput{Name: c.FormValue("name"), Slug: c.FormValue("slug")}
	w, err := s.tenancy.UpdateWorkspace(c.Request().Context(), org.ID, actorID(c), cur.ID, in)
	f := workspaces.Form{Name: in.Name, Slug: in.Slug}
	if errors.As(err, &f.Errors) {
		return s.renderWorkspaceSettings(c, http.StatusUnprocessableEntity, f, workspaces.DeleteForm{}, approverInput{})
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Workspace saved.")
	return s.seeOther(c, paths.WorkspaceSettings(org.Slug, w.Slug))
}

func (s *Server) deleteWorkspace(c echo.Context) error {
	org, w := orgOf(c), workspaceOf(c)
	in := tenancy.DeleteWorkspaceInput{Confirm: c.FormValue("confirm")}
	err := s.tenancy.DeleteWorkspace(c.Request().Context(), w, actorID(c), in)
	var problems validation.Errors
	if errors.As(err, &problems) {
		del := workspaces.DeleteForm{Confirm: in.Confirm, Error: problems["confirm"]}
		return s.renderWorkspaceSettings(c, http.StatusUnprocessableEntity, workspaces.Form{Name: w.Name, Slug: w.Slug}, del, approverInput{})
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Deleted workspace "+w.Name+".")
	return s.seeOther(c, paths.Workspaces(org.Slug))
}

// workspaceJSON is a workspace in the API.
type workspaceJSON struct {
	ID        int64  `json:"id"`
	Slug      string `json:"slug"`
	Name      string `json:"name"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func toWorkspaceJSON(w db.Workspace) workspaceJSON {
	return workspaceJSON{ID: w.ID, Slug: w.Slug, Name: w.Name,
		CreatedAt: w.CreatedAt.UTC().Format(timeFormat), UpdatedAt: w.UpdatedAt.UTC().Format(timeFormat)}
}

func (s *Server) apiWorkspaces(c echo.Context) error {
	all, err := s.store.Workspaces(c.Request().Context(), orgOf(c).ID)
	if err != nil {
		return err
	}
	out := make([]workspaceJSON, 0, len(all))
	for _, w := range all {
		out = append(out, toWorkspaceJSON(w))
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiCreateWorkspace(c echo.Context) error {
	var in tenancy.NameInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	w, err := s.tenancy.CreateWorkspace(c.Request().Context(), orgOf(c).ID, actorID(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toWorkspaceJSON(w))
}

func (s *Server) apiWorkspace(c echo.Context) error {
	return c.JSON(http.StatusOK, toWorkspaceJSON(workspaceOf(c)))
}

func (s *Server) apiUpdateWorkspace(c echo.Context) error {
	cur := workspaceOf(c)
	var body struct {
		Name *string `json:"name"`
		Slug *string `json:"slug"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	in := tenancy.NameInput{Name: cur.Name, Slug: cur.Slug}
	if body.Name != nil {
		in.Name = *body.Name
	}
	if body.Slug != nil {
		in.Slug = *body.Slug
	}
	w, err := s.tenancy.UpdateWorkspace(c.Request().Context(), orgOf(c).ID, actorID(c), cur.ID, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toWorkspaceJSON(w))
}

func (s *Server) apiDeleteWorkspace(c echo.Context) error {
	w := workspaceOf(c)
	if err := s.store.DeleteWorkspace(c.Request().Context(), w.OrgID, w.ID, actorID(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
