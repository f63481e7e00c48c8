package httpcall_test

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolgate/toolgate/internal/gateway/httpcall"
	"github.com/toolgate/toolgate/internal/sources/openapi"
)

// received is what the echo server parsed out of a request body.
type received struct {
	ContentType string              `json:"content_type"`
	JSON        any                 `json:"json,omitempty"`
	Form        map[string][]string `json:"form,omitempty"`
	Files       map[string][]file   `json:"files,omitempty"`
	Text        string              `json:"text,omitempty"`
}

type file struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Content     string `json:"content"`
}

// echoServer parses a body the way a server does, by its content type,
// and answers what it found.
func echoServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		got := received{ContentType: ct}
		media, _, _ := mime.ParseMediaType(ct)
		switch {
		case media == "multipart/form-data":
			if err := r.ParseMultipartForm(1 << 20); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got.Form = r.MultipartForm.Value
			got.Files = map[string][]file{}
			for name, headers := range r.MultipartForm.File {
				for _, h := range headers {
					f, _ := h.Open()
					data, _ := io.ReadAll(f)
					f.Close()
					got.Files[name] = append(got.Files[name], file{h.Filename, h.Header.Get("Content-Type"), string(data)})
				}
			}
		case media == "application/x-www-form-urlencoded":
			if err := r.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got.Form = r.PostForm
		case strings.HasSuffix(media, "json"):
			if err := json.NewDecoder(r.Body).Decode(&got.JSON); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		default:
			data, _ := io.ReadAll(r.Body)
			got.Text = string(data)
		}
		json.NewEncoder(w).Encode(got)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// httpcallBuild builds a request against a placeholder base URL.
func httpcallBuild(ref openapi.Ref, args map[string]any) (*http.Request, error) {
	return httpcall.BuildRequest(context.Background(), ref, "https://api.example.com", args, nil)
}

func TestBodies(t *testing.T) {
	srv := echoServer(t)
	body := func(types ...string) openapi.Ref {
		return openapi.Ref{Method: "POST", Path: "/things", Body: &openapi.BodyRef{ContentTypes: types, Required: true}}
	}
	object := map[string]any{"name": "Rex", "age": 3.0, "good": true, "tags": []any{"a", "b c"}, "owner": map[string]any{"id": 7.0}, "none": nil}
	cases := []struct {
		name   string
		ref    openapi.Ref
		value  any
		binary []string
		want   received
	}{
		{"json object", body("application/json"), object, nil, received{
			ContentType: "application/json",
			JSON:        map[string]any{"name": "Rex", "age": 3.0, "good": true, "tags": []any{"a", "b c"}, "owner": map[string]any{"id": 7.0}, "none": nil},
		}},
		{"json keeps html characters", body("application/json"), map[string]any{"q": "<a&b>"}, nil, received{
			ContentType: "application/json", JSON: map[string]any{"q": "<a&b>"},
		}},
		{"json string", body("application/json"), "just text", nil, received{ContentType: "application/json", JSON: "just text"}},
		{"json array", body("application/json"), []any{1.0, "x"}, nil, received{ContentType: "application/json", JSON: []any{1.0, "x"}}},
		{"+json with parameters", body("application/merge-patch+json; charset=utf-8"), map[string]any{"a": nil}, nil, received{
			ContentType: "application/merge-patch+json; charset=utf-8", JSON: map[string]any{"a": nil},
		}},
		{"urlencoded", body("application/x-www-form-urlencoded"), object, nil, received{
			ContentType: "application/x-www-form-urlencoded",
			// An object's members become fields (form, explode); null is left out.
			Form: map[string][]string{"name": {"Rex"}, "age": {"3"}, "good": {"true"}, "tags": {"a", "b c"}, "id": {"7"}},
		}},
		{"urlencoded escaping", body("application/x-www-form-urlencoded"), map[string]any{"q": "a&b=c+d", "k&": "ü"}, nil, received{
			ContentType: "application/x-www-form-urlencoded", Form: map[string][]string{"q": {"a&b=c+d"}, "k&": {"ü"}},
		}},
		{"multipart", body("multipart/form-data"), object, nil, received{
			ContentType: "multipart/form-data",
			Form: map[string][]string{
				"name": {"Rex"}, "age": {"3"}, "good": {"true"}, "tags": {"a", "b c"},
				"owner": {`{"id":7}`}, // a JSON part
			},
			Files: map[string][]file{},
		}},
		{"multipart with a binary field", body("multipart/form-data"), map[string]any{"file": "GIF89a\r\n\x00ü bytes", "note": "hi", "pages": []any{"p1", "p2"}}, []string{"file", "pages"}, received{
			ContentType: "multipart/form-data",
			Form:        map[string][]string{"note": {"hi"}},
			Files: map[string][]file{
				"file":  {{"file", "application/octet-stream", "GIF89a\r\n\x00ü bytes"}},
				"pages": {{"pages", "application/octet-stream", "p1"}, {"pages", "application/octet-stream", "p2"}},
			},
		}},
		{"text/plain", body("text/plain"), "hello\nworld", nil, received{ContentType: "text/plain", Text: "hello\nworld"}},
		{"octet-stream", body("application/octet-stream"), "raw", nil, received{ContentType: "application/octet-stream", Text: "raw"}},
		{"xml string as is", body("application/xml"), "<a/>", nil, received{ContentType: "application/xml", Text: "<a/>"}},
		{"unknown type, object as JSON", body("application/xml"), map[string]any{"a": 1.0}, nil, received{ContentType: "application/json", JSON: map[string]any{"a": 1.0}}},
		{"text type, object as JSON", body("text/plain"), map[string]any{"a": 1.0}, nil, received{ContentType: "application/json", JSON: map[string]any{"a": 1.0}}},
		{"wildcard, string", body("*/*"), "x", nil, received{ContentType: "text/plain; charset=utf-8", Text: "x"}},
		{"wildcard, object", body("*/*"), map[string]any{"a": 1.0}, nil, received{ContentType: "application/json", JSON: map[string]any{"a": 1.0}}},
		{"no content types", body(), map[string]any{"a": 1.0}, nil, received{ContentType: "application/json", JSON: map[string]any{"a": 1.0}}},
		// The preferred type wins when the value fits it...
		{"json preferred over multipart", body("application/json", "multipart/form-data"), map[string]any{"a": "b"}, nil, received{ContentType: "application/json", JSON: map[string]any{"a": "b"}}},
		{"form preferred over text", body("application/x-www-form-urlencoded", "text/plain"), map[string]any{"a": "b"}, nil, received{ContentType: "application/x-www-form-urlencoded", Form: map[string][]string{"a": {"b"}}}},
		// ...and the next one that fits is taken when it does not.
		{"string skips a form for text", body("application/x-www-form-urlencoded", "text/plain"), "plain", nil, received{ContentType: "text/plain", Text: "plain"}},
		{"object skips text for json", body("text/plain", "application/json"), map[string]any{"a": "b"}, nil, received{ContentType: "application/json", JSON: map[string]any{"a": "b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, tc.ref, srv.URL, map[string]any{"body": tc.value}, nil, httpcall.WithBinaryFields(tc.binary...))
			var got received
			decode(t, res, &got)
			if strings.HasPrefix(got.ContentType, "multipart/form-data;") {
				got.ContentType = "multipart/form-data"
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("server received (-want +got):\n%s", diff)
			}
		})
	}
}

// A JSON part says it is JSON; a text field says nothing.
func TestMultipartPartHeaders(t *testing.T) {
	ref := openapi.Ref{Method: "POST", Path: "/", Body: &openapi.BodyRef{ContentTypes: []string{"multipart/form-data"}}}
	req, err := httpcallBuild(ref, map[string]any{"body": map[string]any{"meta": map[string]any{"k": "v"}, "say": `a "quoted" name`}})
	if err != nil {
		t.Fatal(err)
	}
	_, params, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	data, _ := io.ReadAll(req.Body)
	raw := string(data)
	for _, want := range []string{
		"Content-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"k\":\"v\"}\r\n",
		"Content-Disposition: form-data; name=\"say\"\r\n\r\na \"quoted\" name\r\n",
		"--" + params["boundary"] + "--",
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("body lacks %q:\n%s", want, raw)
		}
	}
	if req.ContentLength != int64(len(data)) || req.GetBody == nil {
		t.Errorf("content length %d for %d bytes, GetBody set %v: redirects could not resend it", req.ContentLength, len(data), req.GetBody != nil)
	}
}

func TestBodyThatCannotBeSent(t *testing.T) {
	ref := openapi.Ref{Method: "POST", Path: "/", Body: &openapi.BodyRef{ContentTypes: []string{"multipart/form-data", "application/x-www-form-urlencoded"}}}
	_, err := httpcallBuild(ref, map[string]any{"body": "not an object"})
	if err == nil || !strings.Contains(err.Error(), `the request body (argument "body"): a string cannot be sent as multipart/form-data or application/x-www-form-urlencoded`) {
		t.Errorf("got %v", err)
	}
}

func TestBinaryFields(t *testing.T) {
	schema := `{"type":"object","properties":{"id":{"type":"string","format":"binary"},"body":{"type":"object","properties":{
		"a":{"type":"string","format":"binary"},
		"b":{"type":"string","contentMediaType":"image/png"},
		"c":{"type":"string","contentMediaType":"image/png","contentEncoding":"base64"},
		"d":{"type":"array","items":{"type":"string","format":"binary"}},
		"e":{"type":"string","format":"byte"},
		"f":{"type":"object"}}}}}`
	if diff := cmp.Diff([]string{"a", "b", "d"}, httpcall.BinaryFields(json.RawMessage(schema))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := httpcall.BinaryFields(json.RawMessage(`not json`)); got != nil {
		t.Errorf("got %v for a broken schema", got)
	}
}
