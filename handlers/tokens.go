package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/views/account"
	"github.com/toolgate/toolgate/views/paths"
)

// Session key holding a just-created token until its page shows it once.
const sessionNewTokenKey = "new_token"

func (s *Server) tokensPage(c echo.Context) error {
	p := account.TokensPage{Form: account.TokenForm{ExpiresInDays: "90"}}
	if v := s.sessions.PopString(c.Request().Context(), sessionNewTokenKey); v != "" {
		name, value, _ := strings.Cut(v, "\n")
		p.Created = &account.CreatedToken{Name: name, Value: value}
	}
	return s.renderTokens(c, http.StatusOK, p)
}

func (s *Server) renderTokens(c echo.Context, status int, p account.TokensPage) error {
	m, err := s.meta(c, "Access tokens", "tokens")
	if err != nil {
		return err
	}
	p.Meta = m
	p.Form.CSRF = m.CSRF
	tokens, err := s.store.Tokens(c.Request().Context(), mustUser(c).ID)
	if err != nil {
		return err
	}
	for _, t := range tokens {
		p.Tokens = append(p.Tokens, account.TokenRow{ID: strconv.FormatInt(t.ID, 10), Name: t.Name, Prefix: t.Prefix,
			CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt})
	}
	return page(c, status, account.Tokens(p), account.TokenCreateForm(p.Form))
}

func (s *Server) createToken(c echo.Context) error {
	form := account.TokenForm{Name: c.FormValue("name"), ExpiresInDays: c.FormValue("expires_in_days")}
	days, err := strconv.Atoi(strings.TrimSpace(form.ExpiresInDays))
	if err != nil {
		days = -1
	}
	t, plain, err := s.tenancy.CreateToken(c.Request().Context(), mustUser(c).ID, tenancy.TokenInput{Name: form.Name, ExpiresInDays: days})
	if errors.As(err, &form.Errors) {
		return s.renderTokens(c, http.StatusUnprocessableEntity, account.TokensPage{Form: form})
	} else if err != nil {
		return err
	}
	// The value crosses the redirect in the server-side session, never in a URL.
	s.sessions.Put(c.Request().Context(), sessionNewTokenKey, t.Name+"\n"+plain)
	return s.seeOther(c, paths.Tokens)
}

func (s *Server) revokeToken(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.store.RevokeToken(c.Request().Context(), mustUser(c).ID, id); err != nil {
		return err
	}
	s.flash(c, "success", "Token revoked. It stops working at once.")
	return s.seeOther(c, paths.Tokens)
}

// pathID parses a numeric path parameter; anything else is 404.
func pathID(c echo.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, db.ErrNotFound
	}
	return id, nil
}

// tokenJSON is a personal access token in the API; Token is set only in
// the answer that creates it.
type tokenJSON struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Prefix     string  `json:"prefix"`
	CreatedAt  string  `json:"created_at"`
	ExpiresAt  *string `json:"expires_at"`
	LastUsedAt *string `json:"last_used_at"`
	Token      string  `json:"token,omitempty"`
}

func toTokenJSON(t db.Token) tokenJSON {
	return tokenJSON{ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt.UTC().Format(timeFormat),
		ExpiresAt: optTime(t.ExpiresAt), LastUsedAt: optTime(t.LastUsedAt)}
}

func (s *Server) apiTokens(c echo.Context) error {
	tokens, err := s.store.Tokens(c.Request().Context(), mustUser(c).ID)
	if err != nil {
		return err
	}
	out := make([]tokenJSON, 0, len(tokens))
	for _, t := range tokens {
		out = append(out, toTokenJSON(t))
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiCreateToken(c echo.Context) error {
	var in tenancy.TokenInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	t, plain, err := s.tenancy.CreateToken(c.Request().Context(), mustUser(c).ID, in)
	if err != nil {
		return err
	}
	out := toTokenJSON(t)
	out.Token = plain
	return c.JSON(http.StatusCreated, out)
}

func (s *Server) apiRevokeToken(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.store.RevokeToken(c.Request().Context(), mustUser(c).ID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// optTime formats an optional time for the API.
func optTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	v := t.UTC().Format(timeFormat)
	return &v
}
