package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/views/connect"
	"github.com/toolgate/toolgate/views/paths"
)

// Session key holding a key created on the connect page, as "workspace
// id\nname\nkey", until the page shows it once (without JavaScript, across
// the redirect).
const sessionConnectKey = "connect_api_key"

// connectURL is the workspace's "Connect an agent" page in a mode.
func connectURL(c echo.Context, mode string) string {
	u := paths.WorkspaceSection(orgOf(c).Slug, workspaceOf(c).Slug, "connect")
	if mode == connect.ModeDirect {
		u += "?mode=" + connect.ModeDirect
	}
	return u
}

// connectMode reads the mode switch: direct, or search for anything else.
func connectMode(v string) string {
	if v == connect.ModeDirect {
		return connect.ModeDirect
	}
	return connect.ModeSearch
}

func (s *Server) connectPage(c echo.Context) error {
	ctx := c.Request().Context()
	b := s.connectBody(c, connectMode(c.QueryParam("mode")), connect.KeyForm{Name: "agent", ExpiresInDays: "90"})
	if v := s.sessions.GetString(ctx, sessionConnectKey); v != "" {
		wsID, rest, _ := strings.Cut(v, "\n")
		if wsID == strconv.FormatInt(workspaceOf(c).ID, 10) {
			s.sessions.Remove(ctx, sessionConnectKey)
			name, key, _ := strings.Cut(rest, "\n")
			b.Created, b.Key = &connect.Created{Name: name}, key
		}
	}
	return s.renderConnect(c, http.StatusOK, b)
}

// connectBody is the page's body in mode with the placeholder key; form is
// dropped for callers who may not create keys.
func (s *Server) connectBody(c echo.Context, mode string, form connect.KeyForm) connect.Body {
	org, w := orgOf(c), workspaceOf(c)
	b := connect.Body{Mode: mode, MCPURL: s.cfg.BaseURL.String() + "/mcp", Key: connect.KeyPlaceholder,
		SearchURL: connectURL(c, connect.ModeSearch), DirectURL: connectURL(c, connect.ModeDirect),
		APIKeysURL: paths.APIKeys(org.Slug, w.Slug)}
	if mode == connect.ModeDirect {
		b.MCPURL += "?mode=" + connect.ModeDirect
	}
	if tenancy.CanCreateAPIKey(roleOf(c)) {
		form.CSRF, form.Action, form.Mode = csrfToken(c), paths.WorkspaceSection(org.Slug, w.Slug, "connect"), mode
		b.Form = &form
	}
	return b
}

func (s *Server) renderConnect(c echo.Context, status int, b connect.Body) error {
	if isHTMX(c) {
		return render(c, status, connect.BodyFragment(b))
	}
	m, err := s.meta(c, "Connect an agent", "connect")
	if err != nil {
		return err
	}
	return render(c, status, connect.Connect(connect.Page{Meta: m, Body: b}))
}

// createConnectKey makes an API key, by the API keys page's rules, in the
// mode the page shows, and shows the snippets with it once.
func (s *Server) createConnectKey(c echo.Context) error {
	mode := connectMode(c.FormValue("mode"))
	form := connect.KeyForm{Name: c.FormValue("name"), ExpiresInDays: c.FormValue("expires_in_days")}
	days, err := strconv.Atoi(strings.TrimSpace(form.ExpiresInDays))
	if err != nil {
		days = -1
	}
	w := workspaceOf(c)
	k, plain, err := s.tenancy.CreateAPIKey(c.Request().Context(), w, mustUser(c), roleOf(c),
		tenancy.APIKeyInput{Name: form.Name, Mode: mode, ExpiresInDays: days})
	if errors.As(err, &form.Errors) {
		return s.renderConnect(c, http.StatusUnprocessableEntity, s.connectBody(c, mode, form))
	} else if err != nil {
		return err
	}
	if isHTMX(c) {
		b := s.connectBody(c, mode, connect.KeyForm{})
		b.Created, b.Key = &connect.Created{Name: k.Name}, plain
		return render(c, http.StatusOK, connect.BodyFragment(b))
	}
	s.sessions.Put(c.Request().Context(), sessionConnectKey, strconv.FormatInt(w.ID, 10)+"\n"+k.Name+"\n"+plain)
	return s.seeOther(c, connectURL(c, mode))
}
