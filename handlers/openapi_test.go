package handlers_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/config"
)

// openAPIDocument is the part of an OpenAPI 3.1 document the test reads.
type openAPIDocument struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Parameters  []openAPIParameter         `json:"parameters"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

type openAPIParameter struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

// openAPIMethods are the keys of a path item that hold operations.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// TestOpenAPIMatchesRoutes keeps /api/v1/openapi.json in step with the route
// table: every /api/v1 route is documented and every documented operation is
// routed. It builds the router without a database, since no request is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatalf("load default configuration: %v", err)
	}
	e := handlers.New(handlers.Deps{
		Config:   cfg,
		Sessions: handlers.NewSessions(cfg, nil),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})

	doc, raw := fetchOpenAPI(t, e)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}

	// The routes, as "METHOD /path/{param}". Groups with middleware add
	// catch-all 404 routes (method echo.RouteNotFound) that are not part of the API.
	routed, api := map[string]bool{}, 0
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound || r.Method == "" || strings.HasSuffix(r.Path, "/*") {
			continue
		}
		routed[r.Method+" "+openAPIPath(r.Path)] = true
		if underAPIv1(r.Path) {
			api++
		}
	}
	if api == 0 {
		t.Fatalf("e.Routes() has no /api/v1 route; the filter above is wrong")
	}

	documented := map[string]bool{}
	operationIDs := map[string]string{}
	for path, item := range doc.Paths {
		var shared []openAPIParameter
		if err := json.Unmarshal(openAPIOrNull(item["parameters"]), &shared); err != nil {
			t.Errorf("%s: parameters do not parse: %v", path, err)
		}
		for method, body := range item {
			if !slices.Contains(openAPIMethods, method) {
				continue
			}
			key := strings.ToUpper(method) + " " + path
			documented[key] = true
			var op openAPIOperation
			if err := json.Unmarshal(body, &op); err != nil {
				t.Errorf("%s: operation does not parse: %v", key, err)
				continue
			}
			if op.OperationID == "" {
				t.Errorf("%s: no operationId", key)
			} else if other, dup := operationIDs[op.OperationID]; dup {
				t.Errorf("%s: operationId %q is also used by %s", key, op.OperationID, other)
			} else {
				operationIDs[op.OperationID] = key
			}
			if !slices.ContainsFunc(openAPIKeys(op.Responses), func(code string) bool { return strings.HasPrefix(code, "2") }) {
				t.Errorf("%s: no 2xx response (has %v)", key, openAPIKeys(op.Responses))
			}
			declared := openAPIPathParams(t, doc, append(slices.Clone(shared), op.Parameters...))
			for _, m := range openAPITemplateParam.FindAllStringSubmatch(path, -1) {
				if !declared[m[1]] {
					t.Errorf("%s: path parameter {%s} is not declared", key, m[1])
				}
			}
		}
	}

	for _, key := range openAPIKeys(routed) {
		_, path, _ := strings.Cut(key, " ")
		if underAPIv1(path) && !documented[key] {
			t.Errorf("route %s has no operation in handlers/openapi.json: document it", key)
		}
	}
	for _, key := range openAPIKeys(documented) {
		if !routed[key] {
			t.Errorf("handlers/openapi.json documents %s, which handlers/routes.go does not route", key)
		}
	}

	for _, ref := range openAPIRef.FindAllStringSubmatch(string(raw), -1) {
		if _, ok := doc.Components[ref[1]][ref[2]]; !ok {
			t.Errorf("$ref #/components/%s/%s points at nothing", ref[1], ref[2])
		}
	}
}

// fetchOpenAPI serves the document through the router, as a client gets it.
func fetchOpenAPI(t *testing.T, e *echo.Echo) (openAPIDocument, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/openapi.json: status %d, want 200: %s", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get(echo.HeaderContentType); !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		t.Errorf("GET /api/v1/openapi.json: Content-Type %q, want application/json", ct)
	}
	var doc openAPIDocument
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("handlers/openapi.json is not valid JSON: %v", err)
	}
	return doc, rec.Body.Bytes()
}

var (
	openAPIEchoParam     = regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	openAPITemplateParam = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)
	openAPIRef           = regexp.MustCompile(`"\$ref":\s*"#/components/([A-Za-z]+)/([A-Za-z0-9_.-]+)"`)
)

// openAPIPath turns /orgs/:org into /orgs/{org}.
func openAPIPath(p string) string { return openAPIEchoParam.ReplaceAllString(p, "{$1}") }

// openAPIPathParams returns the names of the path parameters in params,
// following references into the components.
func openAPIPathParams(t *testing.T, doc openAPIDocument, params []openAPIParameter) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, p := range params {
		if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
			if err := json.Unmarshal(openAPIOrNull(doc.Components["parameters"][name]), &p); err != nil {
				t.Errorf("parameter %s does not parse: %v", p.Ref, err)
				continue
			}
		}
		if p.In == "path" {
			names[p.Name] = true
		}
	}
	return names
}

// underAPIv1 reports whether a route path belongs to the JSON API.
func underAPIv1(p string) bool { return p == "/api/v1" || strings.HasPrefix(p, "/api/v1/") }

// openAPIOrNull turns a missing value into JSON null, which decodes to nothing.
func openAPIOrNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// openAPIKeys returns the sorted keys of m.
func openAPIKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
