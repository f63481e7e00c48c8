package httpcall_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/gateway/httpcall"
	"github.com/toolgate/toolgate/internal/sources/openapi"
)

// The values of the OpenAPI 3.1.1 style examples table (section 4.8.12.6),
// decoded from JSON as the gateway receives them. JSON objects carry no
// order, so object members are serialized sorted by key: where the table
// writes R,100,G,200,B,150 the cells below read B,150,G,200,R,100.
const (
	empty  = `""`
	str    = `"blue"`
	arr    = `["blue","black","brown"]`
	obj    = `{"R":100,"G":200,"B":150}`
	absent = `null`
)

type styleCase struct {
	style   string
	explode bool
	value   string // JSON
	want    string
}

// build makes the request for one parameter named color.
func build(t *testing.T, in, path string, c styleCase) (string, error) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(c.value), &v); err != nil {
		t.Fatal(err)
	}
	ref := openapi.Ref{Method: "GET", Path: path, Params: []openapi.ParamRef{
		{Name: "color", In: in, Style: c.style, Explode: c.explode, Property: "color"},
	}}
	req, err := httpcall.BuildRequest(context.Background(), ref, "http://api.test", map[string]any{"color": v}, nil)
	if err != nil {
		return "", err
	}
	switch in {
	case "path":
		return strings.TrimPrefix(req.URL.EscapedPath(), "/p/x"), nil
	case "query":
		return req.URL.RawQuery, nil
	case "header":
		if vals := req.Header.Values("Color"); len(vals) != 1 {
			return "", errors.New("want one Color header, got " + strings.Join(vals, " | "))
		}
		return req.Header.Get("Color"), nil
	}
	return req.Header.Get("Cookie"), nil
}

func runStyles(t *testing.T, in, path string, cases []styleCase) {
	t.Helper()
	for _, c := range cases {
		name := c.style + "/explode=" + map[bool]string{true: "true", false: "false"}[c.explode] + "/" + c.value
		t.Run(name, func(t *testing.T) {
			got, err := build(t, in, path, c)
			if err != nil {
				t.Fatalf("BuildRequest: %v", err)
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestPathStyles(t *testing.T) {
	// The template puts a literal before the value so the table's empty
	// cells (which alone would make an empty or "." segment) are shown.
	runStyles(t, "path", "/p/x{color}", []styleCase{
		{"matrix", false, empty, ";color"},
		{"matrix", false, str, ";color=blue"},
		{"matrix", false, arr, ";color=blue,black,brown"},
		{"matrix", false, obj, ";color=B,150,G,200,R,100"},
		{"matrix", true, empty, ";color"},
		{"matrix", true, str, ";color=blue"},
		{"matrix", true, arr, ";color=blue;color=black;color=brown"},
		{"matrix", true, obj, ";B=150;G=200;R=100"},
		{"label", false, empty, "."},
		{"label", false, str, ".blue"},
		{"label", false, arr, ".blue,black,brown"},
		{"label", false, obj, ".B,150,G,200,R,100"},
		{"label", true, empty, "."},
		{"label", true, str, ".blue"},
		{"label", true, arr, ".blue.black.brown"},
		{"label", true, obj, ".B=150.G=200.R=100"},
		{"simple", false, empty, ""},
		{"simple", false, str, "blue"},
		{"simple", false, arr, "blue,black,brown"},
		{"simple", false, obj, "B,150,G,200,R,100"},
		{"simple", true, empty, ""},
		{"simple", true, str, "blue"},
		{"simple", true, arr, "blue,black,brown"},
		{"simple", true, obj, "B=150,G=200,R=100"},
		// Not in the table: escaping inside each style.
		{"simple", false, `"a b/c"`, "a%20b%2Fc"},
		{"label", true, `["a.b","c,d"]`, ".a.b.c%2Cd"},
		{"matrix", true, `{"k;":"v="}`, ";k%3B=v%3D"},
		{"simple", false, `[1.5,true,null]`, "1.5,true,"},
		{"simple", false, `[{"a":1}]`, "%7B%22a%22%3A1%7D"},
		// Swagger 2.0's ssv, pipes and tsv in a path.
		{"spaceDelimited", false, arr, "blue%20black%20brown"},
		{"pipeDelimited", false, `["a|b","c"]`, "a%7Cb%7Cc"},
		{"tabDelimited", false, arr, "blue%09black%09brown"},
	})
}

func TestQueryStyles(t *testing.T) {
	runStyles(t, "query", "/q", []styleCase{
		{"form", false, empty, "color="},
		{"form", false, str, "color=blue"},
		{"form", false, arr, "color=blue,black,brown"},
		{"form", false, obj, "color=B,150,G,200,R,100"},
		{"form", true, empty, "color="},
		{"form", true, str, "color=blue"},
		{"form", true, arr, "color=blue&color=black&color=brown"},
		{"form", true, obj, "B=150&G=200&R=100"},
		{"spaceDelimited", false, arr, "color=blue%20black%20brown"},
		{"spaceDelimited", false, obj, "color=B%20150%20G%20200%20R%20100"},
		{"pipeDelimited", false, arr, "color=blue%7Cblack%7Cbrown"},
		{"pipeDelimited", false, obj, "color=B%7C150%7CG%7C200%7CR%7C100"},
		{"deepObject", true, obj, "color%5BB%5D=150&color%5BG%5D=200&color%5BR%5D=100"},
		// Cells the table marks n/a, as toolgate sends them: a primitive
		// as form does, the delimited styles exploded as form does,
		// deepObject without explode as with it.
		{"spaceDelimited", false, str, "color=blue"},
		{"pipeDelimited", true, arr, "color=blue&color=black&color=brown"},
		{"spaceDelimited", true, obj, "B=150&G=200&R=100"},
		{"deepObject", false, obj, "color%5BB%5D=150&color%5BG%5D=200&color%5BR%5D=100"},
		{"deepObject", true, `{"a":{"b":1},"t":["x","y"]}`, "color%5Ba%5D%5Bb%5D=1&color%5Bt%5D=x&color%5Bt%5D=y"},
		// Escaping: a delimiter inside a value is escaped, the style's own is not.
		{"form", false, `["a,b","c d","e&f=g","h+i"]`, "color=a%2Cb,c%20d,e%26f%3Dg,h%2Bi"},
		{"pipeDelimited", false, `["a|b","c"]`, "color=a%7Cb%7Cc"},
		// Swagger 2.0's tsv.
		{"tabDelimited", false, arr, "color=blue%09black%09brown"},
		{"tabDelimited", false, `["a\tb","c"]`, "color=a%09b%09c"},
		{"form", true, `"ünï"`, "color=%C3%BCn%C3%AF"},
		// Absent and empty values are not sent.
		{"form", true, absent, ""},
		{"form", false, `[]`, ""},
		{"deepObject", true, `{}`, ""},
	})
}

func TestHeaderStyles(t *testing.T) {
	runStyles(t, "header", "/h", []styleCase{
		{"simple", false, empty, ""},
		{"simple", false, str, "blue"},
		{"simple", false, arr, "blue,black,brown"},
		{"simple", false, obj, "B,150,G,200,R,100"},
		{"simple", true, empty, ""},
		{"simple", true, str, "blue"},
		{"simple", true, arr, "blue,black,brown"},
		{"simple", true, obj, "B=150,G=200,R=100"},
		// Header values are not percent-encoded.
		{"simple", false, `"a b/c%"`, "a b/c%"},
		// Swagger 2.0's ssv, pipes and tsv in a header.
		{"spaceDelimited", false, arr, "blue black brown"},
		{"pipeDelimited", false, arr, "blue|black|brown"},
		{"tabDelimited", false, arr, "blue\tblack\tbrown"},
	})
}

func TestCookieStyles(t *testing.T) {
	// The table's form cells with "; " between cookies where a query has
	// "&" (OpenAPI's appendix D): exploded values are separate cookies.
	runStyles(t, "cookie", "/c", []styleCase{
		{"form", false, empty, "color="},
		{"form", false, str, "color=blue"},
		{"form", false, arr, "color=blue,black,brown"},
		{"form", false, obj, "color=B,150,G,200,R,100"},
		{"form", true, empty, "color="},
		{"form", true, str, "color=blue"},
		{"form", true, arr, "color=blue; color=black; color=brown"},
		{"form", true, obj, "B=150; G=200; R=100"},
		// A value never adds a cookie of its own.
		{"form", true, `"a; admin=1"`, "color=a%3B%20admin%3D1"},
	})
}

func TestStyleMisuse(t *testing.T) {
	cases := []struct {
		in, path string
		c        styleCase
		want     string
	}{
		{"path", "/p/{color}", styleCase{"form", false, str, ""}, `style "form" is not one a path parameter can have`},
		{"query", "/q", styleCase{"matrix", false, str, ""}, `style "matrix" is not one a query parameter can have`},
		{"query", "/q", styleCase{"simple", false, str, ""}, `style "simple" is not one a query parameter can have`},
		{"query", "/q", styleCase{"deepObject", true, arr, ""}, `style deepObject takes an object, not an array`},
		{"header", "/h", styleCase{"form", false, str, ""}, `style "form" is not one a header parameter can have`},
		{"header", "/h", styleCase{"simple", false, `"a\r\nX-Admin: 1"`, ""}, `line break (CR or LF)`},
		{"header", "/h", styleCase{"simple", false, `["a","b\n"]`, ""}, `line break (CR or LF)`},
		{"header", "/h", styleCase{"simple", false, `"a\u0000b"`, ""}, `control character`},
		{"cookie", "/c", styleCase{"deepObject", false, obj, ""}, `style "deepObject" is not one a cookie parameter can have`},
	}
	for _, tc := range cases {
		t.Run(tc.in+"/"+tc.c.style, func(t *testing.T) {
			_, err := build(t, tc.in, tc.path, tc.c)
			var argErr *httpcall.ArgError
			if !errors.As(err, &argErr) {
				t.Fatalf("got %v, want an *ArgError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `parameter "color"`) {
				t.Errorf("error %q does not name the parameter and say %q", err, tc.want)
			}
		})
	}
}
