package httpcall_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/gateway/httpcall"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/openapi"
)

// call builds a request and sends it with the default client.
func call(t *testing.T, ref openapi.Ref, base string, args map[string]any, auth *sources.Auth, opts ...httpcall.Option) *http.Response {
	t.Helper()
	req, err := httpcall.BuildRequest(context.Background(), ref, base, args, auth, opts...)
	if err != nil {
		t.Fatalf("BuildRequest: %v", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// decode reads a JSON answer into v.
func decode(t *testing.T, res *http.Response, v any) {
	t.Helper()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// A value in a path parameter stays inside its segment: a real router
// sees the same value come back, and values that would make a dot or
// empty segment are refused.
func TestPathValuesCannotEscapeTheirSegment(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/pets/{id}", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"id": r.PathValue("id"), "path": r.URL.EscapedPath(), "query": r.URL.RawQuery})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "routed elsewhere: "+r.URL.EscapedPath(), http.StatusTeapot)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ref := openapi.Ref{Method: "GET", Path: "/pets/{id}", Params: []openapi.ParamRef{{Name: "id", In: "path", Style: "simple", Required: true, Property: "id"}}}

	for _, id := range []string{"../admin", "../../etc/passwd", "a/b", "a?admin=1", "a#frag", "a b", "100%", "%2e%2e", "%2F", "..%2f", "...", ".a", "a;b=c", "a,b", "ünï", `a\b`, "a\r\nb"} {
		t.Run(id, func(t *testing.T) {
			var got struct{ ID, Path, Query string }
			decode(t, call(t, ref, srv.URL+"/v1", map[string]any{"id": id}, nil), &got)
			if got.ID != id || got.Query != "" {
				t.Errorf("server saw id %q and query %q (path %s), want id %q and no query", got.ID, got.Query, got.Path, id)
			}
			if strings.Count(got.Path, "/") != 3 {
				t.Errorf("path %s has more than three segments", got.Path)
			}
		})
	}

	refused := []struct {
		name  string
		ref   openapi.Ref
		value any
	}{
		{"dot-dot", ref, ".."},
		{"dot", ref, "."},
		{"empty", ref, ""},
		{"empty array", ref, []any{}},
		{"label of a dot", withStyle(ref, "label", false), "."},
		{"two values making dot-dot", openapi.Ref{Method: "GET", Path: "/pets/{a}{b}", Params: []openapi.ParamRef{
			{Name: "a", In: "path", Style: "simple", Required: true, Property: "id"},
			{Name: "b", In: "path", Style: "simple", Required: true, Property: "id"},
		}}, "."},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			_, err := httpcall.BuildRequest(context.Background(), tc.ref, srv.URL, map[string]any{"id": tc.value}, nil)
			var argErr *httpcall.ArgError
			if !errors.As(err, &argErr) || !strings.Contains(err.Error(), "would change the path") {
				t.Fatalf("got %v, want an *ArgError saying the path would change", err)
			}
		})
	}
}

func withStyle(ref openapi.Ref, style string, explode bool) openapi.Ref {
	ref.Params = slices.Clone(ref.Params)
	ref.Params[0].Style, ref.Params[0].Explode = style, explode
	return ref
}

func TestBaseURLJoin(t *testing.T) {
	ref := func(path string) openapi.Ref {
		return openapi.Ref{Method: "GET", Path: path, Params: []openapi.ParamRef{
			{Name: "id", In: "path", Style: "simple", Required: true, Property: "id"},
			{Name: "limit", In: "query", Style: "form", Explode: true, Property: "limit"},
		}}
	}
	cases := []struct {
		base, path string
		args       map[string]any
		want       string
	}{
		{"https://api.example.com/v3", "/pets/{id}", map[string]any{"id": 1.0}, "https://api.example.com/v3/pets/1"},
		{"https://api.example.com/v3/", "/pets/{id}", map[string]any{"id": 1.0}, "https://api.example.com/v3/pets/1"},
		{"https://api.example.com/v3//", "/pets/{id}", map[string]any{"id": 1.0}, "https://api.example.com/v3/pets/1"},
		{"https://api.example.com", "/pets/{id}", map[string]any{"id": 1.0}, "https://api.example.com/pets/1"},
		{"https://api.example.com/", "pets/{id}", map[string]any{"id": 1.0}, "https://api.example.com/pets/1"},
		{"https://api.example.com/v3", "/pets/{id}/", map[string]any{"id": "a"}, "https://api.example.com/v3/pets/a/"},
		{"https://api.example.com/v3", "/pets/{id}.json", map[string]any{"id": 7.0}, "https://api.example.com/v3/pets/7.json"},
		{"http://127.0.0.1:8080/a%20b", "/x/{id}", map[string]any{"id": "y"}, "http://127.0.0.1:8080/a%20b/x/y"},
		{"https://api.example.com/v3?api-version=2", "/pets/{id}", map[string]any{"id": 1.0, "limit": 5.0}, "https://api.example.com/v3/pets/1?api-version=2&limit=5"},
		{"https://api.example.com/v3#docs", "/pets/{id}", map[string]any{"id": 1.0}, "https://api.example.com/v3/pets/1"},
		{"  https://api.example.com/v3  ", "/pets/{id}", map[string]any{"id": 1.0, "extra": "ignored"}, "https://api.example.com/v3/pets/1"},
	}
	for _, tc := range cases {
		t.Run(tc.base+" "+tc.path, func(t *testing.T) {
			req, err := httpcall.BuildRequest(context.Background(), ref(tc.path), tc.base, tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.String(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	for _, base := range []string{"", "api.example.com/v3", "/v3", "ftp://api.example.com", "http://"} {
		_, err := httpcall.BuildRequest(context.Background(), ref("/pets/{id}"), base, map[string]any{"id": 1.0}, nil)
		if err == nil || !strings.Contains(err.Error(), "base URL") {
			t.Errorf("base %q: got %v, want an error about the base URL", base, err)
		}
	}
	_, err := httpcall.BuildRequest(context.Background(), openapi.Ref{Method: "GET", Path: "/pets/{petId}"}, "https://api.example.com", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "{petId}") {
		t.Errorf("undeclared template variable: got %v", err)
	}
}

func TestMissingRequiredArguments(t *testing.T) {
	ref := openapi.Ref{Method: "POST", Path: "/pets/{petId}/toys", Params: []openapi.ParamRef{
		{Name: "petId", In: "path", Style: "simple", Required: true, Property: "petId"},
		{Name: "limit", In: "query", Style: "form", Explode: true, Property: "limit"},
		{Name: "X-Request-Id", In: "header", Style: "simple", Required: true, Property: "X-Request-Id"},
		{Name: "id", In: "cookie", Style: "form", Explode: true, Required: true, Property: "id_cookie"},
	}, Body: &openapi.BodyRef{ContentTypes: []string{"application/json"}, Required: true}}

	_, err := httpcall.BuildRequest(context.Background(), ref, "https://api.example.com", map[string]any{"limit": 3.0, "petId": nil}, nil)
	var argErr *httpcall.ArgError
	if !errors.As(err, &argErr) {
		t.Fatalf("got %v, want an *ArgError", err)
	}
	want := []string{
		`path parameter "petId" is required`,
		`header parameter "X-Request-Id" is required`,
		`cookie parameter "id" (argument "id_cookie") is required`,
		`the request body (argument "body") is required`,
	}
	if diff := cmp.Diff(want, argErr.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	// Optional ones may be left out; null counts as left out.
	ref.Body.Required = false
	req, err := httpcall.BuildRequest(context.Background(), ref, "https://api.example.com", map[string]any{
		"petId": 1.0, "X-Request-Id": "r1", "id_cookie": "c", "limit": nil, "body": nil,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.Body != nil || req.URL.RawQuery != "" || req.Header.Get("Content-Type") != "" {
		t.Errorf("got body %v, query %q, content type %q; want none", req.Body, req.URL.RawQuery, req.Header.Get("Content-Type"))
	}
}

// Arguments never replace what the credential sets: a header of the same
// name (in any case), a query parameter, or a cookie. Other cookies join
// the credential's.
func TestCredentialWins(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cookies []string
		for _, c := range r.Cookies() {
			cookies = append(cookies, c.Name+"="+c.Value)
		}
		json.NewEncoder(w).Encode(map[string]any{
			"authorization": r.Header.Values("Authorization"),
			"api_key":       r.Header.Values("X-Api-Key"),
			"trace":         r.Header.Values("X-Trace"),
			"query":         r.URL.Query(),
			"cookies":       cookies,
		})
	}))
	defer srv.Close()

	ref := openapi.Ref{Method: "GET", Path: "/me", Params: []openapi.ParamRef{
		// Discovery leaves Authorization out; a hand-made Ref may not.
		{Name: "authorization", In: "header", Style: "simple", Property: "Authorization"},
		{Name: "X-API-KEY", In: "header", Style: "simple", Property: "X-API-KEY"},
		{Name: "X-Trace", In: "header", Style: "simple", Property: "X-Trace"},
		{Name: "API_KEY", In: "query", Style: "form", Explode: true, Property: "api_key_query"},
		{Name: "filter", In: "query", Style: "form", Explode: true, Property: "filter"},
		{Name: "session", In: "cookie", Style: "form", Explode: true, Property: "session"},
		{Name: "theme", In: "cookie", Style: "form", Explode: true, Property: "theme"},
	}}
	auth := &sources.Auth{}
	auth.SetHeader("Authorization", "Bearer real-token")
	auth.SetHeader("X-Api-Key", "real-key")
	auth.SetHeader("Cookie", "session=real-session")
	auth.SetQuery("api_key", "real-query-key")

	args := map[string]any{
		"Authorization": "Bearer agent-token",
		"X-API-KEY":     "agent-key",
		"X-Trace":       "t1",
		"api_key_query": "agent-query-key",
		"filter":        "x",
		"session":       "agent-session",
		"theme":         "dark",
	}
	var got map[string]any
	decode(t, call(t, ref, srv.URL+"?api_key=from-base", args, auth), &got)
	want := map[string]any{
		"authorization": []any{"Bearer real-token"},
		"api_key":       []any{"real-key"},
		"trace":         []any{"t1"},
		"query":         map[string]any{"api_key": []any{"real-query-key"}, "filter": []any{"x"}},
		"cookies":       []any{"session=real-session", "theme=dark"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upstream saw (-want +got):\n%s", diff)
	}
}

func TestProtocolHeadersAreRefused(t *testing.T) {
	for _, name := range []string{"Host", "content-length", "Transfer-Encoding", "Connection", "Cookie", "Bad Name"} {
		ref := openapi.Ref{Method: "GET", Path: "/", Params: []openapi.ParamRef{{Name: name, In: "header", Style: "simple", Property: "h"}}}
		_, err := httpcall.BuildRequest(context.Background(), ref, "https://api.example.com", map[string]any{"h": "x"}, nil)
		var argErr *httpcall.ArgError
		if !errors.As(err, &argErr) {
			t.Errorf("header %q: got %v, want an *ArgError", name, err)
		}
	}
}

func TestRequestCarriesContextAndMethod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := httpcall.BuildRequest(ctx, openapi.Ref{Method: "delete", Path: "/pets"}, "https://api.example.com", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != http.MethodDelete || req.Context() != ctx {
		t.Errorf("method %s, context kept %v", req.Method, req.Context() == ctx)
	}
	if _, err := httpcall.BuildRequest(ctx, openapi.Ref{Method: "GET /x", Path: "/"}, "https://api.example.com", nil, nil); err == nil {
		t.Error("a method with a space was accepted")
	}
}
