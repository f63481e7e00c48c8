package handlers

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/static"
)

// healthz answers while the process is up.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "version": s.version})
}

// readyz checks every dependency and names those that fail.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	names := make([]string, 0, len(s.checks))
	for name := range s.checks {
		names = append(names, name)
	}
	sort.Strings(names)
	checks := map[string]string{}
	var failing []string
	for _, name := range names {
		if err := s.checks[name](ctx); err != nil {
			checks[name] = "unreachable"
			failing = append(failing, name)
			s.logOf(c).Warn("readiness check failed", "check", name, "error", err)
		} else {
			checks[name] = "ok"
		}
	}
	if len(failing) > 0 {
		return c.JSON(http.StatusServiceUnavailable, map[string]any{
			"status": "unavailable", "checks": checks,
			"message": strings.Join(failing, " and ") + " not reachable",
		})
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ok", "checks": checks})
}

// static serves embedded assets under fingerprinted URLs, cached for a year.
func (s *Server) static(c echo.Context) error {
	name, ok := static.Open(c.Param("*"))
	if !ok {
		return echo.ErrNotFound
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeFileFS(c.Response(), c.Request(), static.FS, name)
	return nil
}
