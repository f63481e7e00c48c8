package jsonscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reference decodes data as encoding/json's Decoder with UseNumber does,
// into an any, and requires nothing but space after the value: what Decode
// must agree with.
func reference(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	rest := data[dec.InputOffset():]
	return v, len(bytes.Trim(rest, " \t\r\n")) == 0
}

func TestDecode(t *testing.T) {
	deep := strings.Repeat("[", maxDecodeDepth+1) + strings.Repeat("]", maxDecodeDepth+1)
	for _, tc := range []struct {
		name, data string
		ok         bool
	}{
		{"object", `{"text": "toolgate bench echo", "n": 7, "f": -1.5e+3, "t": true, "no": false, "z": null}`, true},
		{"nested", `{"a": {"b": [1, {"c": []}, {}]}, "d": [[]]}`, true},
		{"empty", ` {} `, true},
		{"repeated key keeps the last", `{"a": 1, "a": 2}`, true},
		{"escapes", `{"a\u00e9": "x\ty\u0000\"\\\/\ud83d\ude00", "b": "\ud800"}`, true},
		{"not UTF-8", "{\"a\": \"\xff\xfe\"}", true},
		{"UTF-8", `{"ключ": "значение ✓"}`, true},
		{"scalars", `"x"`, true},
		{"number forms", `[0, -0, 10, 1.25, 1e5, 1E-5, 2.5e+10, 123456789012345678901234567890]`, true},
		{"at the depth limit", strings.Repeat("[", maxDecodeDepth) + strings.Repeat("]", maxDecodeDepth), true},
		{"deeper than the limit", deep, false},
		{"leading zero", `[01]`, false},
		{"bare minus", `[-]`, false},
		{"dot without digits", `[1.]`, false},
		{"exponent without digits", `[1e+]`, false},
		{"bad literal", `[tru]`, false},
		{"literal run on", `truex`, false},
		{"control in a string", "\"a\x01b\"", false},
		{"bad escape", `"\x41"`, false},
		{"short unicode escape", `"\u12"`, false},
		{"trailing comma", `{"a": 1,}`, false},
		{"missing colon", `{"a" 1}`, false},
		{"unquoted key", `{a: 1}`, false},
		{"two values", `{} {}`, false},
		{"trailing bracket", `{}]`, false},
		{"truncated", `{"a": [1, 2`, false},
		{"empty input", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Decode([]byte(tc.data))
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			want, wantOK := reference([]byte(tc.data))
			if !wantOK {
				t.Fatal("encoding/json refuses what Decode took")
			}
			if !reflect.DeepEqual(want, got) {
				t.Errorf("Decode differs from encoding/json (-want +got):\n%s", cmp.Diff(want, got))
			}
		})
	}
}

// FuzzDecode holds Decode to encoding/json: whatever it takes, encoding/json
// reads as the same value, and it takes every valid document it can (all
// but the deepest).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"text": "toolgate bench echo"}`, `{"a": [1, -2.5e3, true, false, null, {"b": "\u00e9\n"}]}`,
		`[]`, `{}`, `"x"`, `0`, `{"a":1,"a":{"a":[]}}`, "\"\xff\"", `[1e5, 0.5, -0]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := Decode(data)
		want, wantOK := reference(data)
		switch {
		case ok && !wantOK:
			t.Fatalf("Decode took %q, which encoding/json refuses", data)
		case ok:
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%q: Decode differs from encoding/json (-want +got):\n%s", data, cmp.Diff(want, got))
			}
		case wantOK && Depth(data) <= maxDecodeDepth:
			t.Fatalf("Decode left %q to encoding/json, which reads it", data)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	data := []byte(`{"text": "toolgate bench echo", "limit": 10, "tags": ["a", "b"]}`)
	b.Run("jsonscan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := Decode(data); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := reference(data); !ok {
				b.Fatal("refused")
			}
		}
	})
}
