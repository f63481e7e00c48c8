package httpcall_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/gateway/httpcall"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/openapi"
	"github.com/toolgate/toolgate/internal/testenv"
)

// wire is a request as the upstream's server read it: the request line's
// method and target, the Host, the headers (less the two Go's client adds
// on its own, User-Agent and Accept-Encoding) and the body's bytes.
type wire struct {
	Method, Target, Host string
	Header               http.Header
	Body                 string
}

// upstream is a real HTTP server that records what it receives, and a
// client that delivers every request to it in plain HTTP whatever its
// host and scheme, so that operations whose servers are elsewhere
// (https://uploads.github.com) are called without leaving the machine.
type upstream struct {
	srv    *httptest.Server
	client *http.Client
	mu     sync.Mutex
	last   wire
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		h.Del("User-Agent")
		h.Del("Accept-Encoding")
		u.mu.Lock()
		u.last = wire{Method: r.Method, Target: r.RequestURI, Host: r.Host, Header: h, Body: string(body)}
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(u.srv.Close)
	addr := u.srv.Listener.Addr().String()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	u.client = &http.Client{Transport: &http.Transport{DialContext: dial, DialTLSContext: dial}}
	return u
}

// send builds the request for a tool's call and returns what the upstream
// received.
func (u *upstream) send(t *testing.T, tl sources.Tool, base string, args map[string]any, auth *sources.Auth) wire {
	t.Helper()
	var ref openapi.Ref
	if err := json.Unmarshal(tl.Ref, &ref); err != nil {
		t.Fatal(err)
	}
	req, err := httpcall.BuildRequest(context.Background(), ref, base, args, auth)
	if err != nil {
		t.Fatalf("%s: BuildRequest: %v", tl.Name, err)
	}
	res, err := u.client.Do(req)
	if err != nil {
		t.Fatalf("%s: send: %v", tl.Name, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last
}

// argError builds the request for a tool's call and returns its argument
// problems, failing unless there are some.
func argError(t *testing.T, tl sources.Tool, args map[string]any) []string {
	t.Helper()
	var ref openapi.Ref
	if err := json.Unmarshal(tl.Ref, &ref); err != nil {
		t.Fatal(err)
	}
	_, err := httpcall.BuildRequest(context.Background(), ref, "https://api.example.com", args, nil)
	var argErr *httpcall.ArgError
	if !errors.As(err, &argErr) {
		t.Fatalf("%s: got %v, want an *ArgError", tl.Name, err)
	}
	return argErr.Problems
}

// discover builds the tools of a document, by name.
func discover(t *testing.T, doc []byte, opts openapi.Options) map[string]sources.Tool {
	t.Helper()
	disc, err := openapi.Build(doc, opts)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]sources.Tool{}
	for _, tl := range disc.Tools {
		tools[tl.Name] = tl
	}
	return tools
}

// example reads a document of @readme/oas-examples.
func example(t *testing.T, rel string) []byte {
	t.Helper()
	doc, err := os.ReadFile(testenv.PeerPath(t, "@readme/oas-examples/"+rel))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// header builds the headers expected on the wire.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// multipartWire is a multipart body as mime/multipart writes it, with the
// boundary the request's Content-Type names; parts are given as their
// header lines and content.
func multipartWire(contentType string, parts ...[2]string) string {
	_, params, _ := mime.ParseMediaType(contentType)
	boundary := params["boundary"]
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("--" + boundary + "\r\n" + p[0] + "\r\n\r\n" + p[1])
	}
	b.WriteString("\r\n--" + boundary + "--\r\n")
	return b.String()
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// gif is a file's bytes, not text: a NUL, CR LF and invalid UTF-8.
const gif = "GIF89a\x01\x00\x01\x00\x00\xff\r\n\x00;"

// The Swagger 2.0 petstore, from discovery to the wire: multi query
// arrays, a urlencoded form of formData, a multipart upload with a file,
// and a body parameter's required flag.
func TestSwaggerPetstoreOnTheWire(t *testing.T) {
	up := newUpstream(t)
	tools := discover(t, example(t, "2.0/json/petstore.json"), openapi.Options{})
	base := up.srv.URL + "/v2"

	got := up.send(t, tools["pet.find_pets_by_status"], base, map[string]any{"status": []any{"available", "sold"}}, nil)
	want := wire{Method: "GET", Target: "/v2/pet/findByStatus?status=available&status=sold", Host: up.srv.Listener.Addr().String(), Header: header()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findPetsByStatus (-want +got):\n%s", diff)
	}

	got = up.send(t, tools["pet.update_pet_with_form"], base, map[string]any{"petId": 7.0, "body": map[string]any{"name": "Rex & co", "status": "sold"}}, nil)
	want = wire{Method: "POST", Target: "/v2/pet/7", Host: want.Host, Body: "name=Rex%20%26%20co&status=sold",
		Header: header("Content-Type", "application/x-www-form-urlencoded", "Content-Length", "31")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("updatePetWithForm (-want +got):\n%s", diff)
	}

	got = up.send(t, tools["pet.upload_file"], base, map[string]any{"petId": 7.0, "body": map[string]any{"additionalMetadata": "cute", "file": b64(gif)}}, nil)
	body := multipartWire(got.Header.Get("Content-Type"),
		[2]string{`Content-Disposition: form-data; name="additionalMetadata"`, "cute"},
		[2]string{"Content-Disposition: form-data; name=\"file\"; filename=\"file\"\r\nContent-Type: application/octet-stream", gif},
	)
	want = wire{Method: "POST", Target: "/v2/pet/7/uploadImage", Host: want.Host, Body: body,
		Header: header("Content-Type", got.Header.Get("Content-Type"), "Content-Length", strconv.Itoa(len(body)))}
	if diff := cmp.Diff(want, got); diff != "" || !strings.HasPrefix(got.Header.Get("Content-Type"), "multipart/form-data; boundary=") {
		t.Errorf("uploadFile (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff([]string{`the request body (argument "body") is required`}, argError(t, tools["pet.add_pet"], nil)); diff != "" {
		t.Errorf("addPet without its required body parameter (-want +got):\n%s", diff)
	}

	expanded := discover(t, example(t, "2.0/json/petstore-expanded.json"), openapi.Options{})
	got = up.send(t, expanded["find_pets"], up.srv.URL+"/api", map[string]any{"tags": []any{"dog", "cat,fish"}, "limit": 5.0}, nil)
	if want := "/api/pets?tags=dog,cat%2Cfish&limit=5"; got.Target != want {
		t.Errorf("findPets (csv): %s, want %s", got.Target, want)
	}
}

// Every collectionFormat, in every location that takes one, as a Swagger
// 2.0 upstream reads it.
func TestSwaggerCollectionFormatsOnTheWire(t *testing.T) {
	doc := `{"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {"/items/{ids}": {
		"parameters": [{"name": "ids", "in": "path", "required": true, "type": "array", "items": {"type": "string"}, "collectionFormat": "pipes"}],
		"get": {"operationId": "list", "parameters": [
			{"name": "csv", "in": "query", "type": "array", "items": {"type": "string"}},
			{"name": "ssv", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "ssv"},
			{"name": "tsv", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "tsv"},
			{"name": "pipes", "in": "query", "type": "array", "items": {"type": "integer"}, "collectionFormat": "pipes"},
			{"name": "multi", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "multi"},
			{"name": "X-Csv", "in": "header", "type": "array", "items": {"type": "string"}, "collectionFormat": "csv"},
			{"name": "X-Ssv", "in": "header", "type": "array", "items": {"type": "string"}, "collectionFormat": "ssv"},
			{"name": "X-Tsv", "in": "header", "type": "array", "items": {"type": "string"}, "collectionFormat": "tsv"},
			{"name": "X-Pipes", "in": "header", "type": "array", "items": {"type": "string"}, "collectionFormat": "pipes"}
		], "responses": {"200": {"description": "ok"}}},
		"post": {"operationId": "form", "consumes": ["application/x-www-form-urlencoded"], "parameters": [
			{"name": "csv", "in": "formData", "type": "array", "items": {"type": "string"}},
			{"name": "multi", "in": "formData", "type": "array", "items": {"type": "string"}, "collectionFormat": "multi"},
			{"name": "ssv", "in": "formData", "type": "array", "items": {"type": "string"}, "collectionFormat": "ssv"},
			{"name": "tsv", "in": "formData", "type": "array", "items": {"type": "string"}, "collectionFormat": "tsv"},
			{"name": "pipes", "in": "formData", "type": "array", "items": {"type": "string"}, "collectionFormat": "pipes"},
			{"name": "note", "in": "formData", "type": "string", "required": true}
		], "responses": {"200": {"description": "ok"}}},
		"put": {"operationId": "upload", "consumes": ["application/x-www-form-urlencoded", "multipart/form-data"], "parameters": [
			{"name": "csv", "in": "formData", "type": "array", "items": {"type": "string"}},
			{"name": "file", "in": "formData", "type": "file", "required": true}
		], "responses": {"200": {"description": "ok"}}}
	}}}`
	up := newUpstream(t)
	tools := discover(t, []byte(doc), openapi.Options{})
	host := up.srv.Listener.Addr().String()

	got := up.send(t, tools["list"], up.srv.URL, map[string]any{
		"ids": []any{"a", "b|c"}, "csv": []any{"x", "y z"}, "ssv": []any{"x", "y"}, "tsv": []any{"x", "y"}, "pipes": []any{1.0, 2.0},
		"multi": []any{"x", "y"}, "X-Csv": []any{"a", "b"}, "X-Ssv": []any{"a", "b"}, "X-Tsv": []any{"a", "b"}, "X-Pipes": []any{"a", "b"},
	}, nil)
	want := wire{Method: "GET", Host: host,
		Target: "/items/a%7Cb%7Cc?csv=x,y%20z&ssv=x%20y&tsv=x%09y&pipes=1%7C2&multi=x&multi=y",
		Header: header("X-Csv", "a,b", "X-Ssv", "a b", "X-Tsv", "a\tb", "X-Pipes", "a|b")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	got = up.send(t, tools["form"], up.srv.URL, map[string]any{"ids": []any{"a"}, "body": map[string]any{
		"csv": []any{"x", "y"}, "multi": []any{"x", "y"}, "ssv": []any{"x", "y"}, "tsv": []any{"x", "y"}, "pipes": []any{"x", "y"}, "note": "hi",
	}}, nil)
	body := "csv=x,y&multi=x&multi=y&note=hi&pipes=x%7Cy&ssv=x%20y&tsv=x%09y"
	want = wire{Method: "POST", Target: "/items/a", Host: host, Body: body,
		Header: header("Content-Type", "application/x-www-form-urlencoded", "Content-Length", strconv.Itoa(len(body)))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("form (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`the request body (argument "body") is required`}, argError(t, tools["form"], map[string]any{"ids": []any{"a"}})); diff != "" {
		t.Errorf("formData with a required field, without a body (-want +got):\n%s", diff)
	}

	// A file makes the form multipart; csv is one text part there too.
	got = up.send(t, tools["upload"], up.srv.URL, map[string]any{"ids": []any{"a"}, "body": map[string]any{"csv": []any{"x", "y"}, "file": b64(gif)}}, nil)
	body = multipartWire(got.Header.Get("Content-Type"),
		[2]string{`Content-Disposition: form-data; name="csv"`, "x,y"},
		[2]string{"Content-Disposition: form-data; name=\"file\"; filename=\"file\"\r\nContent-Type: application/octet-stream", gif},
	)
	if got.Body != body {
		t.Errorf("upload body:\n%q\nwant\n%q", got.Body, body)
	}
}

// OpenAPI 3.0's file uploads: a binary body and multipart files, from
// base64 and from data: URLs.
func TestFileUploadsOnTheWire(t *testing.T) {
	up := newUpstream(t)
	tools := discover(t, example(t, "3.0/json/file-uploads.json"), openapi.Options{})
	host := up.srv.Listener.Addr().String()

	png := tools["image_png.post_anything_image_png"]
	got := up.send(t, png, up.srv.URL, map[string]any{"body": b64(gif)}, nil)
	want := wire{Method: "POST", Target: "/anything/image-png", Host: host, Body: gif,
		Header: header("Content-Type", "image/png", "Content-Length", strconv.Itoa(len(gif)))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("image/png (-want +got):\n%s", diff)
	}
	// URL-safe, unpadded, wrapped: still the same bytes.
	wrapped := base64.RawURLEncoding.EncodeToString([]byte(gif))
	wrapped = wrapped[:8] + "\r\n" + wrapped[8:]
	if got := up.send(t, png, up.srv.URL, map[string]any{"body": wrapped}, nil); got.Body != gif {
		t.Errorf("URL-safe base64 sent %q", got.Body)
	}

	single := tools["multipart_form_data.post_anything_multipart_formdata"]
	got = up.send(t, single, up.srv.URL, map[string]any{"body": map[string]any{
		"orderId": 12.0, "userId": 3.0, "documentFile": "data:image/gif;name=tiny%20pic.gif;base64," + b64(gif),
	}}, nil)
	body := multipartWire(got.Header.Get("Content-Type"),
		[2]string{"Content-Disposition: form-data; name=\"documentFile\"; filename=\"tiny pic.gif\"\r\nContent-Type: image/gif", gif},
		[2]string{`Content-Disposition: form-data; name="orderId"`, "12"},
		[2]string{`Content-Disposition: form-data; name="userId"`, "3"},
	)
	if got.Body != body {
		t.Errorf("single file:\n%q\nwant\n%q", got.Body, body)
	}

	got = up.send(t, tools["multipart_form_data.put_anything_multipart_formdata"], up.srv.URL, map[string]any{"body": map[string]any{
		"filename": []any{b64("one"), "data:text/plain;charset=utf-8;base64," + b64("two")},
	}}, nil)
	body = multipartWire(got.Header.Get("Content-Type"),
		[2]string{"Content-Disposition: form-data; name=\"filename\"; filename=\"filename\"\r\nContent-Type: application/octet-stream", "one"},
		[2]string{"Content-Disposition: form-data; name=\"filename\"; filename=\"filename\"\r\nContent-Type: text/plain;charset=utf-8", "two"},
	)
	if got.Body != body {
		t.Errorf("files:\n%q\nwant\n%q", got.Body, body)
	}

	for _, tc := range []struct {
		tool sources.Tool
		body any
		want string
	}{
		{png, "not base64!", `the request body (argument "body"): a file is given as base64 text or a base64 data: URL, and this is neither`},
		{png, "data:image/png,raw", `the request body (argument "body"): a data: URL for a file must be base64-encoded`},
		{png, map[string]any{"a": 1.0}, `the request body (argument "body"): the body is a file: give its bytes as base64 text, not an object`},
		{single, map[string]any{"documentFile": 5.0}, `the request body (argument "body"): field "documentFile": a file is given as base64 text, not a number`},
		{single, map[string]any{"documentFile": "data:image/png;name=a\r\nX-Evil: 1;base64," + b64("x")}, `the request body (argument "body"): field "documentFile": the file name "a\r\nX-Evil: 1" contains a control character`},
	} {
		problems := argError(t, tc.tool, map[string]any{"body": tc.body})
		if len(problems) != 1 || !strings.HasPrefix(problems[0], tc.want) {
			t.Errorf("%v: problems %q, want %q", tc.body, problems, tc.want)
		}
	}
}

// GitHub's release asset upload: the operation's own server, raw bytes
// of the file, and the credential, which no argument replaces.
func TestGitHubReleaseAssetOnTheWire(t *testing.T) {
	doc, err := os.ReadFile(testenv.GitHubSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	tools := discover(t, doc, openapi.Options{})
	up := newUpstream(t)
	auth := &sources.Auth{}
	auth.SetHeader("Authorization", "Bearer ghp_secret")
	got := up.send(t, tools["repos.upload_release_asset"], "https://api.github.com", map[string]any{
		"owner": "octo", "repo": "hello world", "release_id": 42.0, "name": "build (1).zip", "label": "Build #1",
		"body": b64("PK\x03\x04 zip bytes"),
	}, auth)
	want := wire{Method: "POST", Host: "uploads.github.com",
		Target: "/repos/octo/hello%20world/releases/42/assets?name=build%20%281%29.zip&label=Build%20%231",
		Header: header("Authorization", "Bearer ghp_secret", "Content-Type", "application/octet-stream", "Content-Length", "14"),
		Body:   "PK\x03\x04 zip bytes"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upload-release-asset (-want +got):\n%s", diff)
	}
}

// Servers on path items and operations take their calls; relative ones
// resolve against the document's URL.
func TestOperationServersOnTheWire(t *testing.T) {
	up := newUpstream(t)
	tools := discover(t, example(t, "3.0/json/server-path-level.json"), openapi.Options{SourceURL: up.srv.URL + "/specs/server-path-level.json"})
	host := up.srv.Listener.Addr().String()
	base := "https://demo.example.com:443/v2" // the document's, as discovery found it
	for name, want := range map[string][2]string{
		"path.get_relative_path_server":            {host, "/v2/relative-path-server"},
		"operation.get_relative_operation_server":  {host, "/v3/relative-operation-server"},
		"operation.get_operation_server_variables": {"operation.example.com", "/v3/operation-server-variables"},
		"path.get_path_item_ref_server":            {"path-item-ref.example.com", "/path-item-ref-server"},
		"operation.get_empty_operation_servers":    {"empty-operation-path.example.com", "/empty-operation-servers"},
		"path.get_empty_path_item_servers":         {"demo.example.com:443", "/v2/empty-path-item-servers"},
	} {
		got := up.send(t, tools[name], base, nil, nil)
		if got.Host != want[0] || got.Target != want[1] || got.Method != "GET" {
			t.Errorf("%s: %s %s to %s, want GET %s to %s", name, got.Method, got.Target, got.Host, want[1], want[0])
		}
	}
	// A broken operation server is the source's fault, not the agent's.
	ref := openapi.Ref{Method: "GET", Path: "/x", BaseURL: "/relative"}
	_, err := httpcall.BuildRequest(context.Background(), ref, base, nil, nil)
	var argErr *httpcall.ArgError
	if err == nil || errors.As(err, &argErr) || !strings.Contains(err.Error(), `the server of operation GET /x "/relative" is not an absolute http or https URL`) {
		t.Errorf("got %v", err)
	}
}

// allowReserved keeps RFC 3986's reserved characters in a query value;
// parameters described with content are sent as JSON text, escaped for
// their location.
func TestAllowReservedAndContentOnTheWire(t *testing.T) {
	doc := `{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/search/{sel}": {"get": {
		"operationId": "search",
		"parameters": [
			{"name": "sel", "in": "path", "required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
			{"name": "filter", "in": "query", "content": {"application/json": {"schema": {"type": "object"}}}},
			{"name": "next", "in": "query", "allowReserved": true, "schema": {"type": "string"}},
			{"name": "prev", "in": "query", "schema": {"type": "string"}},
			{"name": "ids", "in": "query", "content": {"application/json": {"schema": {"type": "array"}}}},
			{"name": "q", "in": "query", "content": {"text/plain": {"schema": {"type": "string"}}}},
			{"name": "X-Filter", "in": "header", "content": {"application/json": {"schema": {"type": "object"}}}},
			{"name": "prefs", "in": "cookie", "content": {"application/json": {"schema": {"type": "object"}}}}
		],
		"responses": {"200": {"description": "ok"}}}}}}`
	up := newUpstream(t)
	tools := discover(t, []byte(doc), openapi.Options{})
	got := up.send(t, tools["search"], up.srv.URL, map[string]any{
		"sel":      map[string]any{"a": "b/c"},
		"filter":   map[string]any{"tag": "x&y", "n": 2.0},
		"next":     "/page/2?size=10:20@x!$'()*,;=",
		"prev":     "/page/1?size=10",
		"ids":      []any{},
		"q":        "plain text",
		"X-Filter": map[string]any{"k": "v"},
		"prefs":    map[string]any{"theme": "dark; admin=1"},
	}, nil)
	want := wire{Method: "GET", Host: up.srv.Listener.Addr().String(),
		Target: "/search/%7B%22a%22%3A%22b%2Fc%22%7D" +
			"?filter=%7B%22n%22%3A2%2C%22tag%22%3A%22x%26y%22%7D" +
			"&next=/page/2?size=10:20@x!$'()*,;=" +
			"&prev=%2Fpage%2F1%3Fsize%3D10" +
			"&ids=%5B%5D" +
			"&q=plain%20text",
		Header: header("X-Filter", `{"k":"v"}`, "Cookie", "prefs=%7B%22theme%22%3A%22dark%3B%20admin%3D1%22%7D")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The encoding object's styles for multipart fields (ReadMe's examples)
// and for urlencoded ones.
func TestEncodingStylesOnTheWire(t *testing.T) {
	up := newUpstream(t)
	tools := discover(t, example(t, "3.0/json/parameters-style.json"), openapi.Options{})
	var byPath = map[string]sources.Tool{}
	for _, tl := range tools {
		var ref openapi.Ref
		if err := json.Unmarshal(tl.Ref, &ref); err != nil {
			t.Fatal(err)
		}
		byPath[ref.Method+" "+ref.Path] = tl
	}
	value := map[string]any{"primitive": "p q", "array": []any{"a", "b"}, "object": map[string]any{"foo": "1", "bar": "2"}}
	for _, tc := range []struct {
		op    string
		parts [][2]string
	}{
		// No encoding: the defaults, an object as a JSON part.
		{"POST /anything/form-data", [][2]string{
			{`Content-Disposition: form-data; name="array"`, "a"},
			{`Content-Disposition: form-data; name="array"`, "b"},
			{"Content-Disposition: form-data; name=\"object\"\r\nContent-Type: application/json", `{"bar":"2","foo":"1"}`},
			{`Content-Disposition: form-data; name="primitive"`, "p q"},
		}},
		{"POST /anything/form-data/form", [][2]string{
			{`Content-Disposition: form-data; name="array"`, "a,b"},
			{`Content-Disposition: form-data; name="object"`, "bar,2,foo,1"},
			{`Content-Disposition: form-data; name="primitive"`, "p q"},
		}},
		{"PUT /anything/form-data/form", [][2]string{
			{`Content-Disposition: form-data; name="array"`, "a"},
			{`Content-Disposition: form-data; name="array"`, "b"},
			{`Content-Disposition: form-data; name="bar"`, "2"},
			{`Content-Disposition: form-data; name="foo"`, "1"},
			{`Content-Disposition: form-data; name="primitive"`, "p q"},
		}},
		{"POST /anything/form-data/pipeDelimited", [][2]string{
			{`Content-Disposition: form-data; name="array"`, "a|b"},
			{`Content-Disposition: form-data; name="object"`, "bar|2|foo|1"},
			{`Content-Disposition: form-data; name="primitive"`, "p q"},
		}},
	} {
		tl, ok := byPath[tc.op]
		if !ok {
			t.Fatalf("no tool for %s", tc.op)
		}
		got := up.send(t, tl, up.srv.URL, map[string]any{"body": value}, nil)
		if want := multipartWire(got.Header.Get("Content-Type"), tc.parts...); got.Body != want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.op, got.Body, want)
		}
	}

	doc := `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/f": {"post": {"operationId": "f",
		"requestBody": {"content": {"application/x-www-form-urlencoded": {
			"schema": {"type": "object"},
			"encoding": {
				"tags": {"style": "form", "explode": false},
				"ids": {"style": "spaceDelimited"},
				"filter": {"style": "deepObject", "explode": true},
				"next": {"allowReserved": true}
			}}}},
		"responses": {"200": {"description": "ok"}}}}}}`
	tools = discover(t, []byte(doc), openapi.Options{})
	got := up.send(t, tools["f"], up.srv.URL, map[string]any{"body": map[string]any{
		"tags": []any{"a", "b"}, "ids": []any{1.0, 2.0}, "filter": map[string]any{"size": map[string]any{"min": 1.0}}, "next": "/a?b", "plain": []any{"x", "y"},
	}}, nil)
	if want := "filter%5Bsize%5D%5Bmin%5D=1&ids=1%202&next=/a?b&plain=x&plain=y&tags=a,b"; got.Body != want {
		t.Errorf("urlencoded:\n%s\nwant\n%s", got.Body, want)
	}
}
