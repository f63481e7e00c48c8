package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

// post runs a document against a live endpoint and returns its data,
// failing on GraphQL errors.
func post(t *testing.T, endpoint, document string, variables map[string]any) json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": document, "variables": variables})
	resp, err := http.Post(endpoint, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var answer struct {
		Data   json.RawMessage `json:"data"`
		Errors []any           `json:"errors"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || len(answer.Errors) > 0 || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d %s\nfor %s", resp.StatusCode, raw, document)
	}
	return answer.Data
}

func TestYoga(t *testing.T) {
	endpoint := testenv.StartYoga(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	d, err := Introspect(ctx, &http.Client{Timeout: 20 * time.Second}, endpoint, map[string]string{"X-Test": "1"})
	if err != nil {
		t.Fatal(err)
	}
	tools := byName(d)
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{"graphql", "mutation.addBook", "query.authors", "query.book", "query.books"}, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	if d.BaseURL != endpoint || !strings.HasPrefix(d.SpecHash, "sha256:") || d.AuthProfile != nil {
		t.Errorf("discovery: base %q hash %q auth %v", d.BaseURL, d.SpecHash, d.AuthProfile)
	}
	paths := map[string]bool{}
	for _, tl := range sources.AssignPaths("library", d.Tools) {
		paths[tl.Path] = true
	}
	if !paths["library.mutation.addBook"] || !paths["library.query.book"] || !paths["library.graphql"] {
		t.Errorf("paths = %v", paths)
	}

	jsonEqual(t, "mutation.addBook input", tools["mutation.addBook"].InputSchema, `{
		"type": "object", "additionalProperties": false, "required": ["input"],
		"properties": {"input": {"type": "object", "additionalProperties": false, "required": ["title", "authorId"], "properties": {
			"title": {"type": "string"},
			"authorId": {"type": "string"},
			"year": {"type": "integer"},
			"tags": {"type": "array", "items": {"type": "string"}}
		}}}
	}`)
	jsonEqual(t, "query.books input", tools["query.books"].InputSchema, `{
		"type": "object", "additionalProperties": false,
		"properties": {
			"first": {"type": "integer", "default": 10},
			"order": {"type": "string", "enum": ["NEWEST", "OLDEST"]}
		}
	}`)
	if got := tools["query.book"].Description; got != "Look up a book by id." {
		t.Errorf("query.book description = %q", got)
	}
	if doc := refOf(t, tools["query.book"]).Document; doc != "query Book($id: ID!) { book(id: $id) { id title author { id name } year tags } }" {
		t.Errorf("query.book document = %s", doc)
	}

	// Every generated document runs, and its answer fits the output schema.
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"query.book", map[string]any{"id": "b1"}},
		{"query.books", map[string]any{"order": "OLDEST"}},
		{"query.authors", nil},
		{"mutation.addBook", map[string]any{"input": map[string]any{"title": "The Lathe of Heaven", "authorId": "a1", "year": 1971}}},
	}
	for _, c := range calls {
		tl := tools[c.tool]
		if c.args != nil {
			if err := compileSchema(t, c.tool+" input", tl.InputSchema).Validate(roundTrip(t, c.args)); err != nil {
				t.Errorf("%s: arguments do not fit the input schema: %v", c.tool, err)
			}
		}
		data := post(t, endpoint, refOf(t, tl).Document, c.args)
		if err := compileSchema(t, c.tool+" output", tl.OutputSchema).Validate(roundTrip(t, data)); err != nil {
			t.Errorf("%s: answer %s does not fit the output schema: %v", c.tool, data, err)
		}
		if c.tool == "query.book" {
			var got struct{ Book struct{ Title string } }
			_ = json.Unmarshal(data, &got)
			if got.Book.Title != "The Dispossessed" {
				t.Errorf("query.book answered %s", data)
			}
		}
	}
}

// roundTrip turns a Go value into what jsonschema validates: decoded JSON.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestYogaWithoutIntrospection(t *testing.T) {
	endpoint := testenv.StartYoga(t, "--no-introspection")
	_, err := Introspect(t.Context(), &http.Client{Timeout: 20 * time.Second}, endpoint, nil)
	if err == nil {
		t.Fatal("introspection worked")
	}
	want := "introspecting " + endpoint + ": the endpoint refuses introspection (it answered: GraphQL introspection has been disabled"
	t.Logf("error: %v", err)
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "); paste its schema as SDL or introspection JSON instead") {
		t.Fatalf("error = %q", err)
	}
}

// slow answers only after ten seconds, or not at all when the client
// gives up first (reading the body lets the server notice that).
func slow(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func TestIntrospectHTTP(t *testing.T) {
	result := introspect(t, library)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		want    string // error suffix after "introspecting <url>: "; empty means success
	}{
		{"answers with the schema and gets the headers", func(w http.ResponseWriter, r *http.Request) {
			var req struct{ Query, OperationName string }
			_ = json.NewDecoder(r.Body).Decode(&req)
			if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer t0ken" ||
				r.Header.Get("Content-Type") != "application/json" || req.Query != IntrospectionQuery {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":` + string(result) + `}`))
		}, 0, ""},
		{"500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
		}, 0, "the endpoint answered HTTP 500"},
		{"500 with GraphQL errors", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"errors":[{"message":"database down"}]}`))
		}, 0, "the endpoint answered HTTP 502: database down"},
		{"HTML page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<!DOCTYPE html><html><body>Welcome</body></html>"))
		}, 0, "the endpoint answered with an HTML page, not GraphQL; check that the URL is the GraphQL endpoint itself (often ending in /graphql)"},
		{"HTML 404", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("<html><body>Not here</body></html>"))
		}, 0, "the endpoint answered HTTP 404 with an HTML page, not GraphQL"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("hello"))
		}, 0, `the endpoint's answer is not JSON (invalid character 'h' looking for beginning of value); it starts with "hello"`},
		{"JSON without a schema", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"data":{"ok":true}}`))
		}, 0, `the endpoint's answer holds no schema; it starts with "{\"data\":{\"ok\":true}}"`},
		{"GraphQL error with 200", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"errors":[{"message":"Cannot query field \"__schema\" on type \"Query\"."}],"data":null}`))
		}, 0, `the endpoint refuses introspection (it answered: Cannot query field "__schema" on type "Query".); paste its schema as SDL or introspection JSON instead`},
		{"unauthorized", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/graphql"}`))
		}, 0, "the endpoint answered HTTP 401: Bad credentials; check the source's credentials"},
		{"timeout", slow, 300 * time.Millisecond, "the endpoint did not answer in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			client := &http.Client{Timeout: 10 * time.Second}
			if tt.timeout > 0 {
				client.Timeout = tt.timeout
			}
			d, err := Introspect(t.Context(), client, srv.URL, map[string]string{"Authorization": "Bearer t0ken"})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(d.Tools) != 9 || d.BaseURL != srv.URL {
					t.Fatalf("%d tools, base %q", len(d.Tools), d.BaseURL)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			prefix := "introspecting " + srv.URL + ": "
			if !strings.HasPrefix(err.Error(), prefix+tt.want) {
				t.Fatalf("error = %q\nwant    %q", err, prefix+tt.want)
			}
		})
	}

	t.Run("cancelled context", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(slow))
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := Introspect(ctx, nil, srv.URL, nil)
		if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
			t.Fatalf("error = %v", err)
		}
	})
}
