package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/validation"
	viewsources "github.com/toolgate/toolgate/views/sources"
)

// sourceForm reads the console's source form into the view's state and
// the service's input. Lines that do not parse are field errors.
func sourceForm(c echo.Context) (viewsources.Form, sources.Input, validation.Errors) {
	f := viewsources.Form{
		Name: c.FormValue("name"), Type: c.FormValue("type"), Scope: c.FormValue("scope"),
		Transport: c.FormValue("transport"), Command: c.FormValue("command"), Args: c.FormValue("args"),
		Env: c.FormValue("env"), Cwd: c.FormValue("cwd"), URL: c.FormValue("url"), Headers: c.FormValue("headers"),
		Spec: c.FormValue("spec"), BaseURL: c.FormValue("base_url"), Endpoint: c.FormValue("endpoint"), Schema: c.FormValue("schema"),
		ConnectTimeout: c.FormValue("connect_timeout"), CallTimeout: c.FormValue("call_timeout"),
		ApprovalOverride: c.FormValue("approval_override"),
	}
	problems := validation.Errors{}
	if err := checkApprovalOverride(overrideOf(f.ApprovalOverride)); err != nil {
		problems.Add("approval_override", err["approval_override"])
	}
	in := sources.Input{Name: f.Name, Type: sources.Type(f.Type), Scope: sources.Scope(f.Scope)}
	var cfg any
	switch in.Type {
	case sources.TypeMCP:
		mc := sources.MCPConfig{Transport: f.Transport, Cwd: f.Cwd,
			ConnectTimeoutSeconds: seconds(f.ConnectTimeout, "config.connectTimeoutSeconds", problems),
			CallTimeoutSeconds:    seconds(f.CallTimeout, "config.callTimeoutSeconds", problems)}
		if f.Transport == sources.TransportStdio {
			mc.Command = f.Command
			mc.Args = lines(f.Args)
			mc.Env = pairs(f.Env, "=", "config.env", "KEY=value", problems)
		} else {
			mc.Cwd = ""
			mc.URL = f.URL
			mc.Headers = pairs(f.Headers, ":", "config.headers", "Name: value", problems)
		}
		cfg = mc
	case sources.TypeOpenAPI:
		spec := strings.TrimSpace(f.Spec)
		if fh, err := c.FormFile("spec_file"); err == nil && fh.Size > 0 {
			if fh.Size > sources.MaxSpecBytes {
				problems.Add("config.spec", fmt.Sprintf("The file is larger than the %d MiB limit.", sources.MaxSpecBytes>>20))
			} else if file, err := fh.Open(); err == nil {
				b, _ := io.ReadAll(io.LimitReader(file, sources.MaxSpecBytes+1))
				file.Close()
				spec = string(b)
				f.Spec = ""
			}
		}
		raw, _ := json.Marshal(spec)
		if strings.HasPrefix(spec, "{") && json.Valid([]byte(spec)) {
			raw = json.RawMessage(spec)
		}
		cfg = struct {
			Spec    json.RawMessage `json:"spec"`
			BaseURL string          `json:"baseUrl,omitempty"`
		}{raw, f.BaseURL}
	case sources.TypeGraphQL:
		cfg = sources.GraphQLConfig{Endpoint: f.Endpoint, Schema: f.Schema}
	}
	if cfg != nil {
		in.Config, _ = json.Marshal(cfg)
	}
	return f, in, problems
}

// lines splits a textarea into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// seconds parses an optional whole number of seconds; empty is 0 (the default).
func seconds(s, field string, problems validation.Errors) int {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > sources.MaxTimeoutSeconds {
		problems.Add(field, fmt.Sprintf("Enter a whole number of seconds from 1 to %d, or leave it empty for the default.", sources.MaxTimeoutSeconds))
		return 0
	}
	return n
}

// pairs parses "key<sep>value" lines.
func pairs(s, sep, field, shape string, problems validation.Errors) map[string]string {
	out := map[string]string{}
	for i, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, sep)
		if !ok || strings.TrimSpace(k) == "" {
			problems.Add(field, fmt.Sprintf("Line %d is not %s.", i+1, shape))
			continue
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

// formOf fills the form from a saved source, with secrets masked.
func formOf(src sourceView) viewsources.Form {
	f := viewsources.Form{Name: src.Name, Type: src.Type, Scope: src.Scope, Editing: true}
	if src.ApprovalOverride != nil {
		f.ApprovalOverride = *src.ApprovalOverride
	}
	switch c := src.config.(type) {
	case *sources.MCPConfig:
		f.Transport, f.Command, f.Cwd, f.URL = c.Transport, c.Command, c.Cwd, c.URL
		f.Args = strings.Join(c.Args, "\n")
		f.Env = joinPairs(c.Env, "=")
		f.Headers = joinPairs(c.Headers, ": ")
		if c.ConnectTimeoutSeconds > 0 {
			f.ConnectTimeout = strconv.Itoa(c.ConnectTimeoutSeconds)
		}
		if c.CallTimeoutSeconds > 0 {
			f.CallTimeout = strconv.Itoa(c.CallTimeoutSeconds)
		}
	case *sources.OpenAPIConfig:
		f.BaseURL = c.BaseURL
		if u := c.SpecURL(); u != "" {
			f.Spec = u
		} else {
			f.Spec = string(c.SpecDocument())
		}
	case *sources.GraphQLConfig:
		f.Endpoint, f.Schema = c.Endpoint, c.Schema
	}
	return f
}

func joinPairs(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + sep + m[k] + "\n")
	}
	return b.String()
}

// overrideOf reads the form's approval override: empty is none (nil).
func overrideOf(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// checkApprovalOverride refuses an approval override other than auto,
// required or none (nil).
func checkApprovalOverride(v *string) validation.Errors {
	if v == nil || *v == "auto" || *v == "required" {
		return nil
	}
	return validation.Field("approval_override", "Choose auto, required, or none (null) for each tool's own default.")
}

// approvalOverrideJSON is a source's approval_override in a request body:
// Set when the field was sent, Value nil for null.
type approvalOverrideJSON struct {
	Set   bool
	Value *string
}

// UnmarshalJSON records that the field was sent, and its value.
func (o *approvalOverrideJSON) UnmarshalJSON(b []byte) error {
	o.Set = true
	return json.Unmarshal(b, &o.Value)
}

// saveApprovalOverride writes a source's approval override when it
// differs from the stored one.
func (s *Server) saveApprovalOverride(ctx context.Context, src db.Source, v *string) (db.Source, error) {
	if deref(src.ApprovalOverride) == deref(v) {
		return src, nil
	}
	return s.store.SetSourceApprovalOverride(ctx, src.OrgID, src.ID, v)
}
