package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/views/apikeys"
	"github.com/toolgate/toolgate/views/paths"
)

// Session key holding a just-created API key, as "workspace id\nname\nkey",
// until the workspace's API keys page shows it once.
const sessionNewAPIKey = "new_api_key"

// ---- Console ----

func (s *Server) apiKeysPage(c echo.Context) error {
	ctx := c.Request().Context()
	var p apikeys.Page
	// The value crosses the redirect in the server-side session, never in a
	// URL, and shows only on the page of the workspace it was made in.
	if v := s.sessions.GetString(ctx, sessionNewAPIKey); v != "" {
		wsID, rest, _ := strings.Cut(v, "\n")
		if wsID == strconv.FormatInt(workspaceOf(c).ID, 10) {
			s.sessions.Remove(ctx, sessionNewAPIKey)
			name, value, _ := strings.Cut(rest, "\n")
			p.Created = &apikeys.Created{Name: name, Value: value}
		}
	}
	return s.renderAPIKeys(c, http.StatusOK, p, &apikeys.Form{Mode: tenancy.ModeSearch, ExpiresInDays: "90"})
}

// renderAPIKeys renders the page with form, which is dropped for callers
// who may not create keys.
func (s *Server) renderAPIKeys(c echo.Context, status int, p apikeys.Page, form *apikeys.Form) error {
	m, err := s.meta(c, "API keys", "api-keys")
	if err != nil {
		return err
	}
	org, w, u, role := orgOf(c), workspaceOf(c), mustUser(c), roleOf(c)
	p.Meta = m
	if tenancy.CanCreateAPIKey(role) {
		form.CSRF, form.Action = m.CSRF, paths.APIKeys(org.Slug, w.Slug)
		p.Form = form
	}
	keys, err := s.store.APIKeys(c.Request().Context(), org.ID, w.ID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		r := apikeys.Row{ID: strconv.FormatInt(k.ID, 10), Name: k.Name, Prefix: k.Prefix, Owner: ownerName(k),
			Mode: k.Mode, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt}
		if tenancy.CanRevokeAPIKey(u.ID, role, k) {
			r.RevokeURL = paths.APIKey(org.Slug, w.Slug, r.ID) + "/revoke"
		}
		p.Rows = append(p.Rows, r)
	}
	var fragment = apikeys.CreateForm(apikeys.Form{})
	if p.Form != nil {
		fragment = apikeys.CreateForm(*p.Form)
	}
	return page(c, status, apikeys.List(p), fragment)
}

// ownerName names a key's owner: their name, else their email.
func ownerName(k db.APIKey) string {
	if k.OwnerName != "" {
		return k.OwnerName
	}
	return k.OwnerEmail
}

func (s *Server) createAPIKey(c echo.Context) error {
	form := apikeys.Form{Name: c.FormValue("name"), Mode: c.FormValue("mode"), ExpiresInDays: c.FormValue("expires_in_days")}
	days, err := strconv.Atoi(strings.TrimSpace(form.ExpiresInDays))
	if err != nil {
		days = -1
	}
	w := workspaceOf(c)
	k, plain, err := s.tenancy.CreateAPIKey(c.Request().Context(), w, mustUser(c), roleOf(c),
		tenancy.APIKeyInput{Name: form.Name, Mode: form.Mode, ExpiresInDays: days})
	if errors.As(err, &form.Errors) {
		return s.renderAPIKeys(c, http.StatusUnprocessableEntity, apikeys.Page{}, &form)
	} else if err != nil {
		return err
	}
	s.sessions.Put(c.Request().Context(), sessionNewAPIKey, strconv.FormatInt(w.ID, 10)+"\n"+k.Name+"\n"+plain)
	return s.seeOther(c, paths.APIKeys(orgOf(c).Slug, w.Slug))
}

func (s *Server) revokeAPIKey(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.tenancy.RevokeAPIKey(c.Request().Context(), workspaceOf(c), mustUser(c), roleOf(c), id); err != nil {
		return err
	}
	s.flash(c, "success", "API key revoked. It stops working at once.")
	return s.seeOther(c, paths.APIKeys(orgOf(c).Slug, workspaceOf(c).Slug))
}

// ---- JSON API ----

// apiKeyJSON is a workspace API key in the API; Key is set only in the
// answer that creates it.
type apiKeyJSON struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Prefix     string  `json:"prefix"`
	Mode       string  `json:"mode"`
	OwnerID    int64   `json:"owner_id"`
	OwnerEmail string  `json:"owner_email"`
	CreatedAt  string  `json:"created_at"`
	ExpiresAt  *string `json:"expires_at"`
	LastUsedAt *string `json:"last_used_at"`
	Key        string  `json:"key,omitempty"`
}

func toAPIKeyJSON(k db.APIKey) apiKeyJSON {
	return apiKeyJSON{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Mode: k.Mode, OwnerID: k.UserID, OwnerEmail: k.OwnerEmail,
		CreatedAt: k.CreatedAt.UTC().Format(timeFormat), ExpiresAt: optTime(k.ExpiresAt), LastUsedAt: optTime(k.LastUsedAt)}
}

func (s *Server) apiAPIKeys(c echo.Context) error {
	keys, err := s.store.APIKeys(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID)
	if err != nil {
		return err
	}
	out := make([]apiKeyJSON, 0, len(keys))
	for _, k := range keys {
		out = append(out, toAPIKeyJSON(k))
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiCreateAPIKey(c echo.Context) error {
	var in tenancy.APIKeyInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	k, plain, err := s.tenancy.CreateAPIKey(c.Request().Context(), workspaceOf(c), mustUser(c), roleOf(c), in)
	if err != nil {
		return err
	}
	out := toAPIKeyJSON(k)
	out.Key = plain
	return c.JSON(http.StatusCreated, out)
}

func (s *Server) apiRevokeAPIKey(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.tenancy.RevokeAPIKey(c.Request().Context(), workspaceOf(c), mustUser(c), roleOf(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
