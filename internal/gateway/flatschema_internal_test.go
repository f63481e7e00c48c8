package gateway

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

func TestParseFlatSchema(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		flat         bool
	}{
		{"go-sdk's inferred schema", `{"type":"object","properties":{"text":{"type":"string","description":"the text"},"n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean"}},"required":["text"],"additionalProperties":false}`, true},
		{"open, with annotations", `{"type":"object","title":"Args","description":"d","properties":{"q":{"type":"string","default":"x","examples":["a"]}}}`, true},
		{"no properties", `{"type":"object"}`, true},
		{"no type", `{"properties":{"q":{"type":"string"}}}`, false},
		{"an array", `{"type":"array"}`, false},
		{"$schema", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`, false},
		{"enum", `{"type":"object","properties":{"q":{"type":"string","enum":["a"]}}}`, false},
		{"format", `{"type":"object","properties":{"q":{"type":"string","format":"email"}}}`, false},
		{"min length", `{"type":"object","properties":{"q":{"type":"string","minLength":1}}}`, false},
		{"nested object", `{"type":"object","properties":{"q":{"type":"object"}}}`, false},
		{"type list", `{"type":"object","properties":{"q":{"type":["string","null"]}}}`, false},
		{"untyped property", `{"type":"object","properties":{"q":{"description":"anything"}}}`, false},
		{"boolean property schema", `{"type":"object","properties":{"q":true}}`, false},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"string"}}`, false},
		{"a $ref", `{"type":"object","properties":{"q":{"$ref":"#/$defs/q"}},"$defs":{"q":{"type":"string"}}}`, false},
		{"minProperties", `{"type":"object","minProperties":1}`, false},
		{"not JSON", `{`, false},
	} {
		if got := parseFlatSchema([]byte(tc.schema)) != nil; got != tc.flat {
			t.Errorf("%s: flat %v, want %v", tc.name, got, tc.flat)
		}
	}
}

// TestFlatSchemaNeverPassesWhatTheValidatorRefuses tries many arguments
// against flat schemas: whatever the quick check lets through, the
// validator must take too, and the quick check must take the usual
// arguments that fit (or it saves nothing).
func TestFlatSchemaNeverPassesWhatTheValidatorRefuses(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean"}},"required":["text"],"additionalProperties":false}`,
		`{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"}},"required":["n","text"]}`,
		`{"type":"object","additionalProperties":false}`,
		`{"type":"object"}`,
	}
	values := []string{`"x"`, `""`, `"\u00e9"`, `0`, `-7`, `12345678901234567890`, `1.0`, `1e2`, `-0.5`, `true`, `false`, `null`, `{}`, `[]`, `[1]`, `{"a":1}`}
	keys := []string{"text", "n", "f", "b", "other"}
	rng := rand.New(rand.NewPCG(6, 7))
	var passed, fit int
	for _, raw := range schemas {
		schema, err := compileSchema([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		flat := parseFlatSchema([]byte(raw))
		if flat == nil {
			t.Fatalf("%s is not read as flat", raw)
		}
		for range 5000 {
			doc := "{"
			for i, k := range keys {
				if rng.IntN(2) == 0 {
					continue
				}
				if len(doc) > 1 {
					doc += ","
				}
				doc += `"` + k + `":` + values[(i+rng.IntN(len(values)))%len(values)]
			}
			doc += "}"
			v, err := decodeArguments(json.RawMessage(doc))
			if err != nil {
				t.Fatal(err)
			}
			args := v.(map[string]any)
			ok := flat.passes(args)
			p := problems(schema, args)
			if ok && len(p) > 0 {
				t.Fatalf("schema %s, arguments %s: the quick check passed them, the validator says %q", raw, doc, p)
			}
			if ok {
				passed++
			}
			if len(p) == 0 {
				fit++
			}
		}
	}
	// Integers written 1.0 or 1e2 are left to the validator; everything
	// else that fits passes the quick check.
	if passed == 0 || passed < fit*3/4 {
		t.Errorf("the quick check passed %d of the %d argument sets that fit", passed, fit)
	}
	var nilFlat *flatSchema
	if nilFlat.passes(map[string]any{}) {
		t.Error("a nil flat schema passes arguments")
	}
}

func BenchmarkValidateArguments(b *testing.B) {
	raw := []byte(`{"type":"object","properties":{"text":{"type":"string","description":"the text to send back"}},"required":["text"],"additionalProperties":false}`)
	schema, err := compileSchema(raw)
	if err != nil {
		b.Fatal(err)
	}
	flat := parseFlatSchema(raw)
	v, _ := decodeArguments(json.RawMessage(`{"text": "toolgate bench echo"}`))
	args := v.(map[string]any)
	b.Run("validator", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p := problems(schema, args); len(p) > 0 {
				b.Fatal(p)
			}
		}
	})
	b.Run("flat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !flat.passes(args) {
				b.Fatal("refused")
			}
		}
	})
}
