package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

type member struct{ key, value string }

func members(t testing.TB, data string) ([]member, bool) {
	t.Helper()
	var got []member
	ok := Members([]byte(data), func(k, v []byte) bool {
		got = append(got, member{string(k), string(v)})
		return true
	})
	return got, ok
}

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []member
		ok         bool
	}{
		{"empty object", `{}`, nil, true},
		{"null", ` null `, nil, true},
		{"spaced empty", " {\n\t} ", nil, true},
		{"flat", `{"a":1,"b":"x","c":true,"d":null,"e":-1.5e3}`,
			[]member{{"a", "1"}, {"b", `"x"`}, {"c", "true"}, {"d", "null"}, {"e", "-1.5e3"}}, true},
		{"nested", `{"params":{"name":"call_tool","arguments":{"path":"a.b","arguments":{"x":[1,{"y":"}"}]}}},"id":7}`,
			[]member{{"params", `{"name":"call_tool","arguments":{"path":"a.b","arguments":{"x":[1,{"y":"}"}]}}}`}, {"id", "7"}}, true},
		{"strings with brackets and escapes", `{"a":"{[\"]}","b":["\\",""]}`,
			[]member{{"a", `"{[\"]}"`}, {"b", `["\\",""]`}}, true},
		{"whitespace everywhere", " { \"a\" :\n[ 1 , 2 ] ,\t\"b\" : { } } ",
			[]member{{"a", "[ 1 , 2 ]"}, {"b", "{ }"}}, true},
		{"escaped key", `{"\u006dethod":"x"}`, nil, false},
		{"array", `[1,2]`, nil, false},
		{"string", `"x"`, nil, false},
		{"number", `12`, nil, false},
		{"truncated", `{"a":1`, []member{{"a", "1"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := members(t, tc.data)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v (members %q)", ok, tc.ok, got)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("members %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("member %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestElements(t *testing.T) {
	for _, tc := range []struct {
		data string
		want []string
		ok   bool
	}{
		{`[]`, nil, true},
		{` [ ] `, nil, true},
		{`[1,"a",{"b":[2]},[3,4],null,true]`, []string{"1", `"a"`, `{"b":[2]}`, "[3,4]", "null", "true"}, true},
		{"[ 1 ,\n\"]\" ]", []string{"1", `"]"`}, true},
		{`{"a":1}`, nil, false},
		{`null`, nil, false},
	} {
		var got []string
		ok := Elements([]byte(tc.data), func(v []byte) bool {
			got = append(got, string(v))
			return true
		})
		if ok != tc.ok || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Elements(%s) = %q, %v; want %q, %v", tc.data, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDepth(t *testing.T) {
	for data, want := range map[string]int{
		`7`: 0, `"{["`: 0, `{}`: 1, `[1,[2,[3]]]`: 3, `{"a":"]]]","b":{"c":["\"{"]}}`: 3,
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001): 1001,
	} {
		if got := Depth([]byte(data)); got != want {
			t.Errorf("Depth(%.40s) = %d, want %d", data, got, want)
		}
	}
}

func TestFields(t *testing.T) {
	keys := []string{"a", "b", "c"}
	for _, tc := range []struct {
		data string
		want []string // "-" for absent
		ok   bool
	}{
		{`{"c":[1],"a":"x"}`, []string{`"x"`, "-", "[1]"}, true},
		{`{}`, []string{"-", "-", "-"}, true},
		{`null`, []string{"-", "-", "-"}, true},
		{`{"a":1,"a":2}`, nil, false},
		{`{"a":1,"d":2}`, nil, false},
		{`{"A":1}`, nil, false},
		{`{"\u0061":1}`, nil, false},
		{`[1]`, nil, false},
	} {
		values := [][]byte{[]byte("stale"), nil, nil}
		ok := Fields([]byte(tc.data), keys, values)
		if ok != tc.ok {
			t.Errorf("Fields(%s) = %v, want %v", tc.data, ok, tc.ok)
			continue
		}
		for i, w := range tc.want {
			got := "-"
			if values[i] != nil {
				got = string(values[i])
			}
			if got != w {
				t.Errorf("Fields(%s)[%s] = %s, want %s", tc.data, keys[i], got, w)
			}
		}
	}
}

func TestString(t *testing.T) {
	for raw, want := range map[string]string{
		`"plain"`: "plain", `""`: "", `"a\"b\\c\/d\u00e9\n"`: "a\"b\\c/dé\n", "\"\xff\"": "\ufffd",
	} {
		if got, ok := String([]byte(raw)); !ok || got != want {
			t.Errorf("String(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`7`, `null`, `{"a":"b"}`, `"`, ``} {
		if got, ok := String([]byte(raw)); ok {
			t.Errorf("String(%s) = %q, want no string", raw, got)
		}
	}
}

func TestMembersStops(t *testing.T) {
	n := 0
	ok := Members([]byte(`{"a":1,"b":2,"c":3}`), func(k, v []byte) bool {
		n++
		return string(k) != "b"
	})
	if ok || n != 2 {
		t.Fatalf("ok %v after %d members; want false after 2", ok, n)
	}
}

func TestMembersDoesNotAllocate(t *testing.T) {
	data := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"call_tool","arguments":{"path":"x.y","arguments":{"m":"hi"}}}}`)
	keys := []string{"jsonrpc", "id", "method", "params"}
	allocs := testing.AllocsPerRun(100, func() {
		Members(data, func(k, v []byte) bool { return true })
		var values [4][]byte
		Fields(data, keys, values[:])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per scan, want 0", allocs)
	}
}

// FuzzMembers checks Members against encoding/json on every valid object
// without escaped or repeated keys: the same keys, and values that decode
// to the same thing.
func FuzzMembers(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `{"a":1}`, `{"a":{"b":[1,2,{"c":"d\"}"}]},"e":"f"}`,
		`{"a" : "\\" , "b":[ ] ,"c":{ }}`, `{"x":-0.5E+2,"y":false,"z":null}`,
		`{"\n":"k"}`, `{"é":"ü","😀":"\ud83d\ude00"}`, `[{"a":1}]`, `"{}"`, `[ 1 , [] ,"]"]`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || !utf8.Valid(data) {
			return // encoding/json would replace invalid UTF-8 in keys
		}
		var want map[string]json.RawMessage
		isObject := json.Unmarshal(data, &want) == nil
		seen := map[string]bool{}
		repeated := false
		got := map[string][]byte{}
		ok := Members(data, func(k, v []byte) bool {
			if seen[string(k)] {
				repeated = true
			}
			seen[string(k)] = true
			got[string(k)] = v
			return true
		})
		var wantArray []json.RawMessage
		if json.Unmarshal(data, &wantArray) == nil {
			n := 0
			if !Elements(data, func(v []byte) bool {
				if n >= len(wantArray) || !sameJSON(v, wantArray[n]) {
					t.Fatalf("element %d of %q: %q", n, data, v)
				}
				n++
				return true
			}) || n != len(wantArray) {
				if !bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
					t.Fatalf("Elements refused or cut short the array %q after %d", data, n)
				}
			}
		}
		escaped := bytes.Contains(data, []byte(`\`))
		switch {
		case !isObject:
			if ok {
				t.Fatalf("Members accepted %q, which is not an object", data)
			}
			return
		case !ok && !escaped:
			t.Fatalf("Members refused the object %q", data)
		case !ok || repeated:
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d members, encoding/json finds %d in %q", len(got), len(want), data)
		}
		for k, v := range want {
			g, present := got[k]
			if !present {
				t.Fatalf("key %q missing from %q", k, data)
			}
			if !sameJSON(g, v) {
				t.Fatalf("key %q: %s, encoding/json has %s", k, g, v)
			}
		}
	})
}

// sameJSON reports whether a and b decode to the same value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

func BenchmarkMembers(b *testing.B) {
	data := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"call_tool","arguments":{"path":"echo-mcp.echo","arguments":{"message":"toolgate bench echo"}}}}`)
	b.Run("jsonscan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !json.Valid(data) || !Members(data, func(k, v []byte) bool { return true }) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding/json map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]json.RawMessage
			if json.Unmarshal(data, &m) != nil {
				b.Fatal("refused")
			}
		}
	})
}
