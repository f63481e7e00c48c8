package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/toolgate/toolgate/internal/testenv"
)

// stdlibJSON is what encoding/json writes for v with HTML escaping off.
func stdlibJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestEncoderMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, false, json.Number("-1.5e10"), json.Number("9223372036854775807"),
		"", "plain", "quote \" backslash \\ slash /", "\x00\x01\x1f\x7f\b\f\n\r\t",
		"<html> & </html>", "line\u2028para\u2029", "bad \xff\xfe utf-8 \xe2\x82", "é, 日本, 😀",
		[]any{}, map[string]any{}, []any{nil, "a", []any{json.Number("1")}},
		map[string]any{"b": 1.5, "a": map[string]any{"z": []any{}, "\u00e9": "x", "A": nil}, "": "empty key"},
	}
	b := &builder{}
	for _, v := range values {
		got, err := b.marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := stdlibJSON(t, v); !bytes.Equal(got, want) {
			t.Errorf("marshal(%#v) = %s, want %s", v, got, want)
		}
	}
}

// TestEncoderMatchesOnGitHub re-encodes every schema built from GitHub's
// description with encoding/json: the bytes must be the same.
func TestEncoderMatchesOnGitHub(t *testing.T) {
	doc, err := os.ReadFile(testenv.GitHubSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	disc, err := Build(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range disc.Tools {
		for _, raw := range []json.RawMessage{tl.InputSchema, tl.OutputSchema} {
			if raw == nil {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%s: %v", tl.Name, err)
			}
			if want := stdlibJSON(t, v); !bytes.Equal(raw, want) {
				t.Fatalf("%s: encoding differs from encoding/json", tl.Name)
			}
		}
	}
}
