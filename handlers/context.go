package handlers

import (
	"log/slog"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
)

// Keys of the values middleware stores on the echo.Context.
const (
	ctxUser      = "toolgate.user"
	ctxToken     = "toolgate.token"
	ctxOrg       = "toolgate.org"
	ctxWorkspace = "toolgate.workspace"
	ctxLogger    = "toolgate.logger"
	ctxSession   = "toolgate.session"
)

// hasSession reports whether the request passed the session middleware;
// routes outside it (assets, health) have none to read.
func hasSession(c echo.Context) bool { return c.Get(ctxSession) == true }

// actorID is the signed-in user's id, or 0.
func actorID(c echo.Context) int64 {
	u, _ := userOf(c)
	return u.ID
}

// userOf returns the signed-in user; ok is false for anonymous requests.
func userOf(c echo.Context) (db.User, bool) {
	u, ok := c.Get(ctxUser).(db.User)
	return u, ok
}

// mustUser returns the user of a route behind requireUser.
func mustUser(c echo.Context) db.User {
	u, _ := userOf(c)
	return u
}

// viaToken reports whether the request authenticated with a bearer token.
func viaToken(c echo.Context) bool {
	_, ok := c.Get(ctxToken).(db.Token)
	return ok
}

// orgOf returns the organization of a route behind loadOrg.
func orgOf(c echo.Context) db.UserOrganization {
	o, _ := c.Get(ctxOrg).(db.UserOrganization)
	return o
}

// roleOf returns the caller's role in the route's organization.
func roleOf(c echo.Context) auth.Role { return auth.Role(orgOf(c).Role) }

// workspaceOf returns the workspace of a route behind loadWorkspace.
func workspaceOf(c echo.Context) db.Workspace {
	w, _ := c.Get(ctxWorkspace).(db.Workspace)
	return w
}

// logOf returns the request's logger, which carries the request id.
func (s *Server) logOf(c echo.Context) *slog.Logger {
	if l, ok := c.Get(ctxLogger).(*slog.Logger); ok {
		return l
	}
	return s.log
}
