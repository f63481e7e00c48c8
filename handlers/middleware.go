package handlers

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/views/paths"
)

// sessionUserKey holds the signed-in user's id in the session, and
// sessionGenerationKey the user's session generation when it began: a
// session of an older generation has ended (the password changed since).
const (
	sessionUserKey       = "uid"
	sessionGenerationKey = "gen"
)

// secretInPath matches URL segments that carry a secret, for redaction.
var secretInPath = regexp.MustCompile(`(tg[a-z]_)[a-z2-7]+`)

// redactPath hides invitation and token secrets before a path is logged.
func redactPath(p string) string { return secretInPath.ReplaceAllString(p, "${1}[redacted]") }

// requestLog gives every request a logger carrying its request id and logs
// the request once when it ends, with its organization and workspace.
func (s *Server) requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		id := c.Response().Header().Get(echo.HeaderXRequestID)
		l := s.log.With("request_id", id)
		c.Set(ctxLogger, l)
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		attrs := []any{
			"method", c.Request().Method,
			"path", redactPath(c.Request().URL.Path),
			"status", c.Response().Status,
			"duration_ms", time.Since(start).Milliseconds(),
			"client_ip", c.RealIP(),
		}
		if u, ok := userOf(c); ok {
			attrs = append(attrs, "user_id", u.ID)
		}
		if o := orgOf(c); o.ID != 0 {
			attrs = append(attrs, "org", o.Slug)
		}
		if w := workspaceOf(c); w.ID != 0 {
			attrs = append(attrs, "workspace", w.Slug)
		}
		level := slog.LevelInfo
		if c.Response().Status >= 500 {
			level = slog.LevelError
		}
		l.Log(c.Request().Context(), level, "request", attrs...)
		return nil
	}
}

// securityHeaders sets a strict content security policy and friends.
func securityHeaders() echo.MiddlewareFunc {
	return middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection:         "0",
		ContentTypeNosniff:    "nosniff",
		XFrameOptions:         "DENY",
		ReferrerPolicy:        "same-origin",
		ContentSecurityPolicy: "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
	})
}

// csrf protects every state-changing request that a browser could send with
// the session cookie. Requests authenticated by a bearer token carry no
// ambient credential and skip it.
func (s *Server) csrf() echo.MiddlewareFunc {
	return middleware.CSRFWithConfig(middleware.CSRFConfig{
		TokenLookup:    "header:X-CSRF-Token,form:_csrf",
		CookieName:     "toolgate_csrf",
		CookiePath:     "/",
		CookieHTTPOnly: true,
		CookieSameSite: http.SameSiteLaxMode,
		CookieSecure:   s.cfg.SecureCookies(),
		CookieMaxAge:   int(s.cfg.SessionLifetime.Seconds()),
		Skipper: func(c echo.Context) bool {
			return bearerToken(c) != "" || isAPI(c) && !s.hasSessionCookie(c)
		},
		ErrorHandler: func(err error, c echo.Context) error {
			return errCSRF
		},
	})
}

// hasSessionCookie reports whether the request carries a session cookie: an
// API request without one has no ambient credential to forge, and gets 401
// from authentication instead of a CSRF refusal.
func (s *Server) hasSessionCookie(c echo.Context) bool {
	_, err := c.Cookie(s.sessions.Cookie.Name)
	return err == nil
}

// errCSRF answers a missing or wrong CSRF token.
var errCSRF = errors.New("the form expired or came from another site; reload the page and try again")

// csrfToken is the token forms and htmx must send back.
func csrfToken(c echo.Context) string {
	t, _ := c.Get("csrf").(string)
	return t
}

// bearerToken returns the token of an Authorization: Bearer header.
func bearerToken(c echo.Context) string {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// sessionUser loads the user of the session cookie, if any.
func (s *Server) sessionUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if id := s.sessions.GetInt64(ctx, sessionUserKey); id != 0 {
			u, err := s.store.UserByID(ctx, id)
			switch {
			case err == nil && s.sessions.GetInt64(ctx, sessionGenerationKey) == u.SessionGeneration:
				c.Set(ctxUser, u)
			case err == nil, errors.Is(err, db.ErrNotFound):
				_ = s.sessions.Destroy(ctx)
			default:
				return err
			}
		}
		return next(c)
	}
}

// apiUser authenticates an API request by bearer token or, failing that, by
// session. A bad token is 401 even when a session cookie is present.
func (s *Server) apiUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
			tok := bearerToken(c)
			if tok == "" {
				return auth.ErrUnauthenticated
			}
			u, t, err := s.auth.UserByToken(c.Request().Context(), tok)
			if err != nil {
				return err
			}
			c.Set(ctxUser, u)
			c.Set(ctxToken, t)
			return next(c)
		}
		return s.sessionUser(next)(c)
	}
}

// requireUser sends anonymous browsers to sign in, and back afterwards.
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, ok := userOf(c); ok {
			return next(c)
		}
		if isAPI(c) {
			return auth.ErrUnauthenticated
		}
		back := paths.Home
		if c.Request().Method == http.MethodGet {
			back = c.Request().URL.RequestURI()
		} else if ref := c.Request().Header.Get("HX-Current-URL"); ref != "" {
			back = localPath(ref)
		}
		return s.seeOther(c, paths.WithNext(paths.SignIn, back))
	}
}

// loadOrg resolves :org to an organization the user belongs to. Anyone else
// gets 404, so an outsider cannot tell whether it exists.
func (s *Server) loadOrg(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		o, err := s.store.OrganizationOf(c.Request().Context(), mustUser(c).ID, c.Param("org"))
		if err != nil {
			return err
		}
		c.Set(ctxOrg, o)
		return next(c)
	}
}

// loadWorkspace resolves :ws within the route's organization.
func (s *Server) loadWorkspace(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		w, err := s.store.WorkspaceBySlug(c.Request().Context(), orgOf(c).ID, c.Param("ws"))
		if err != nil {
			return err
		}
		c.Set(ctxWorkspace, w)
		return next(c)
	}
}

// requireRole lets through members holding at least min in the organization.
func requireRole(min auth.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !roleOf(c).AtLeast(min) {
				return auth.ErrForbidden
			}
			return next(c)
		}
	}
}

// isAPI reports whether the request is for the JSON API.
func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/") }

// isHTMX reports whether htmx sent the request.
func isHTMX(c echo.Context) bool { return c.Request().Header.Get("HX-Request") == "true" }

// localPath keeps only the path and query of a URL, so a redirect target
// taken from input never leaves this site.
func localPath(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			raw = rest[j:]
		} else {
			raw = "/"
		}
	}
	// Browsers drop tabs and newlines from URLs and read a backslash as a
	// slash, so "/\t/evil.test" would become "//evil.test": refuse them all.
	if !strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "//") ||
		strings.ContainsFunc(raw, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return paths.Home
	}
	return raw
}

// Request body limits: specs and schemas may be large; everything else is small.
const (
	maxBody       = 1 << 20
	maxSourceBody = sources.MaxSpecBytes + 1<<20
)

// bodyLimit caps request bodies, with room for a 64 MiB spec on the routes
// that take one, and names the limit when it refuses.
func bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		limit := int64(maxBody)
		if strings.Contains(c.Request().URL.Path, "/sources") {
			limit = maxSourceBody
		}
		req := c.Request()
		if req.ContentLength > limit {
			return tooLarge(limit)
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
		return next(c)
	}
}

func tooLarge(limit int64) error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("The request is larger than the %d MiB limit.", limit>>20))
}
