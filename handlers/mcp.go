package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/config"
)

// mcpFirst serves /mcp before Echo's router and the console's middleware.
// Agents call it thousands of times a second, and the console's chain
// (request ids, a logger per request, an INFO line per request, security
// headers for pages) cost about as much CPU as the rest of a proxied
// call; the tool_calls audit is the record of every call. What the chain
// gives /mcp is kept here: the body limit, recovery from a panic, and a
// log line for failures (and for every request at debug level).
func (s *Server) mcpFirst(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.mcp == nil || r.URL.Path != "/mcp" {
			return next(c)
		}
		start, w := time.Now(), c.Response()
		logged := false
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p) // net/http's own way to abort a response
				}
				s.log.Error("mcp: panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !w.Committed {
					http.Error(w, "toolgate failed to serve the request", http.StatusInternalServerError)
				}
			}
			if !logged {
				s.logMCP(r, w.Status, start)
			}
		}()
		switch r.Method {
		case http.MethodGet, http.MethodPost, http.MethodDelete:
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return nil
		}
		if r.ContentLength > MCPMaxBody {
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the limit is %d MiB", MCPMaxBody>>20), http.StatusRequestEntityTooLarge)
			return nil
		}
		r.Body = http.MaxBytesReader(w, r.Body, MCPMaxBody)
		if s.mcpConns != nil && s.mcpConns.TakeOver(w, r) {
			logged = true // by the loop, which knows the status
			return nil
		}
		s.mcp.ServeHTTP(w, r)
		return nil
	}
}

// MCPMaxBody is the largest /mcp request body. internal/fastconn's loop,
// which hands the handler the bodies it read, must read no larger.
const MCPMaxBody = maxBody

// MCPRequestLog returns the log line of an /mcp request: errors always,
// refusals at info, the rest at debug; nothing is built when the level is
// off. The handlers and internal/fastconn's loops log with it.
func MCPRequestLog(cfg config.Config, log *slog.Logger) func(r *http.Request, status int, start time.Time) {
	ip := ipExtractor(cfg)
	return func(r *http.Request, status int, start time.Time) {
		level := slog.LevelDebug
		switch {
		case status >= 500:
			level = slog.LevelError
		case status >= 400:
			level = slog.LevelInfo
		}
		if !log.Enabled(r.Context(), level) {
			return
		}
		log.Log(r.Context(), level, "request", "method", r.Method, "path", "/mcp", "status", status,
			"duration_ms", time.Since(start).Milliseconds(), "client_ip", ip(r))
	}
}
