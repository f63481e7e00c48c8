package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaURL names a tool's input schema inside its own compiler.
const schemaURL = "https://toolgate.invalid/input-schema.json"

// compileSchema compiles a tool's input schema. Its references resolve
// inside the document only: toolgate never fetches a schema a tool names
// (neither from the network nor from a file on the server).
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the input schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// refuseLoader loads no external schema.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the schema refers to %s, which toolgate does not fetch", url)
}

// problems lists, in plain words with the JSON pointer of each value
// first, every way v fails schema; nil when it passes.
func problems(schema *jsonschema.Schema, v any) []string {
	err := schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	collect(ve, &out)
	sort.Strings(out)
	return compactStrings(out)
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// collect walks a validation error down to the failures that say
// something: groups and references are only containers, and the
// alternatives of anyOf and oneOf are summed up rather than listed (each
// alternative's own failures would read as contradictions).
func collect(e *jsonschema.ValidationError, out *[]string) {
	at := pointer(e.InstanceLocation)
	if len(e.Causes) == 0 && secretLocation(e.InstanceLocation) && showsValue(e.ErrorKind) {
		// The message would quote the value of a secret-looking argument,
		// and problems reach the audit.
		*out = append(*out, at+": is not a valid value (not shown: the argument looks secret)")
		return
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Group, *kind.Schema, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			collect(c, out)
		}
	case *kind.AnyOf:
		*out = append(*out, at+": matches none of the shapes this value may take")
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			*out = append(*out, at+": matches none of the shapes this value may take")
		} else {
			*out = append(*out, at+": matches more than one of the shapes this value may take, and must match exactly one")
		}
	case *kind.Required:
		for _, name := range k.Missing {
			*out = append(*out, pointer(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], name))+": required, but missing")
		}
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			where := "is not an argument this tool takes"
			if len(e.InstanceLocation) > 0 {
				where = "is not a property allowed here"
			}
			*out = append(*out, pointer(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], name))+": "+where)
		}
	case *kind.Type:
		*out = append(*out, fmt.Sprintf("%s: must be %s, not %s", at, strings.Join(k.Want, " or "), k.Got))
	case *kind.Enum:
		*out = append(*out, at+": "+strings.TrimPrefix(k.LocalizedString(printer), "value "))
	case *kind.MinLength:
		*out = append(*out, fmt.Sprintf("%s: must be at least %d characters long, not %d", at, k.Want, k.Got))
	case *kind.MaxLength:
		*out = append(*out, fmt.Sprintf("%s: must be at most %d characters long, not %d", at, k.Want, k.Got))
	case *kind.Minimum:
		*out = append(*out, fmt.Sprintf("%s: must be at least %s, not %s", at, number(k.Want), number(k.Got)))
	case *kind.Maximum:
		*out = append(*out, fmt.Sprintf("%s: must be at most %s, not %s", at, number(k.Want), number(k.Got)))
	case *kind.MinItems:
		*out = append(*out, fmt.Sprintf("%s: must have at least %d items, not %d", at, k.Want, k.Got))
	case *kind.MaxItems:
		*out = append(*out, fmt.Sprintf("%s: must have at most %d items, not %d", at, k.Want, k.Got))
	default:
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				collect(c, out)
			}
			return
		}
		*out = append(*out, at+": "+e.ErrorKind.LocalizedString(printer))
	}
}

// secretLocation reports a value under a secret-looking key.
func secretLocation(tokens []string) bool {
	for _, t := range tokens {
		if secretKey(t) {
			return true
		}
	}
	return false
}

// showsValue reports kinds whose message quotes the value.
func showsValue(k jsonschema.ErrorKind) bool {
	switch k.(type) {
	case *kind.Type, *kind.Required, *kind.AdditionalProperties, *kind.MinLength, *kind.MaxLength,
		*kind.MinItems, *kind.MaxItems, *kind.MinProperties, *kind.MaxProperties:
		return false
	}
	return true
}

// printer renders the messages the validator words itself.
var printer = message.NewPrinter(language.English)

// number writes a bound as a person would.
func number(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.RatString()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// pointer is a JSON pointer (RFC 6901); the arguments themselves are
// "(arguments)", which reads better than an empty pointer.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "(arguments)"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
