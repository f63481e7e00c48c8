package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/sources"
)

// IntrospectionQuery is the standard introspection query: descriptions,
// arguments, input fields, enum values, deprecations, and type references
// nested deep enough for [[T!]!]! and beyond. It asks only for what every
// GraphQL server since the 2018 spec answers (no specifiedByURL,
// isRepeatable or deprecated arguments), so older servers accept it.
const IntrospectionQuery = `query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
    directives {
      name
      description
      locations
      args { ...InputValue }
    }
  }
}

fragment FullType on __Type {
  kind
  name
  description
  fields(includeDeprecated: true) {
    name
    description
    args { ...InputValue }
    type { ...TypeRef }
    isDeprecated
    deprecationReason
  }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) {
    name
    description
    isDeprecated
    deprecationReason
  }
  possibleTypes { ...TypeRef }
}

fragment InputValue on __InputValue {
  name
  description
  type { ...TypeRef }
  defaultValue
}

fragment TypeRef on __Type {
  kind
  name
  ofType {
    kind
    name
    ofType {
      kind
      name
      ofType {
        kind
        name
        ofType {
          kind
          name
          ofType {
            kind
            name
            ofType {
              kind
              name
              ofType {
                kind
                name
              }
            }
          }
        }
      }
    }
  }
}
`

// Introspect POSTs [IntrospectionQuery] to endpoint with the given headers
// and builds tools from the answer. The client decides where it may connect
// and how long it waits (toolgate passes its outbound guard); nil means
// [http.DefaultClient]. Cancelling ctx stops the request.
func Introspect(ctx context.Context, client *http.Client, endpoint string, headers map[string]string) (*sources.Discovery, error) {
	body, err := fetchIntrospection(ctx, client, endpoint, headers)
	if err != nil {
		return nil, fmt.Errorf("introspecting %s: %w", endpoint, err)
	}
	d, err := FromIntrospection(body)
	if err != nil {
		return nil, fmt.Errorf("introspecting %s: %w", endpoint, err)
	}
	d.BaseURL = endpoint
	return d, nil
}

// fetchIntrospection runs the introspection query and returns the answer
// when it holds a schema, or an error that says what the endpoint did.
func fetchIntrospection(ctx context.Context, client *http.Client, endpoint string, headers map[string]string) ([]byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	payload, _ := json.Marshal(map[string]string{"query": IntrospectionQuery, "operationName": "IntrospectionQuery"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("the endpoint is not a usable URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json;q=0.9")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err // it repeats the method and URL we already name
		}
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, fmt.Errorf("the endpoint did not answer in time: %w", err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, sources.MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if len(body) > sources.MaxSpecBytes {
		return nil, errTooLarge
	}

	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	html := mediaType == "text/html" || startsLikeHTML(body)
	var answer struct {
		Data *struct {
			Schema json.RawMessage `json:"__schema"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
		Message string `json:"message"` // REST-style errors, as GitHub's 401
	}
	jsonErr := errors.New("not JSON")
	if !html {
		jsonErr = json.Unmarshal(body, &answer)
	}
	hasSchema := jsonErr == nil && answer.Data != nil && len(answer.Data.Schema) > 0 && string(answer.Data.Schema) != "null"
	firstError := ""
	if jsonErr == nil && len(answer.Errors) > 0 {
		firstError = strings.TrimSpace(answer.Errors[0].Message)
	}
	if jsonErr == nil && firstError == "" && !hasSchema {
		firstError = strings.TrimSpace(answer.Message)
	}

	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("the endpoint answered HTTP %d%s; check the source's credentials", resp.StatusCode, colon(firstError))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		if firstError != "" && resp.StatusCode < 500 {
			// GraphQL over HTTP answers request errors, such as a refused
			// introspection, with 4xx and the errors in the body.
			return nil, refused(firstError)
		}
		if html {
			return nil, fmt.Errorf("the endpoint answered HTTP %d with an HTML page, not GraphQL", resp.StatusCode)
		}
		return nil, fmt.Errorf("the endpoint answered HTTP %d%s", resp.StatusCode, colon(firstError))
	case html:
		return nil, errors.New("the endpoint answered with an HTML page, not GraphQL; check that the URL is the GraphQL endpoint itself (often ending in /graphql)")
	case jsonErr != nil:
		return nil, fmt.Errorf("the endpoint's answer is not JSON (%v); it starts with %q", jsonErr, snippet(body))
	case !hasSchema && firstError != "":
		return nil, refused(firstError)
	case !hasSchema:
		return nil, fmt.Errorf("the endpoint's answer holds no schema; it starts with %q", snippet(body))
	}
	return body, nil
}

func refused(message string) error {
	return fmt.Errorf("the endpoint refuses introspection (it answered: %s); paste its schema as SDL or introspection JSON instead", message)
}

func colon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b[:min(len(b), 120)]))
	if len(b) > 120 {
		s += "…"
	}
	return s
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// The parts of an introspection result the tools need.
type (
	introspectionSchema struct {
		QueryType        *namedRef   `json:"queryType"`
		MutationType     *namedRef   `json:"mutationType"`
		SubscriptionType *namedRef   `json:"subscriptionType"`
		Types            []introType `json:"types"`
	}
	namedRef struct {
		Name string `json:"name"`
	}
	introType struct {
		Kind          string       `json:"kind"`
		Name          string       `json:"name"`
		Description   string       `json:"description"`
		Fields        []introField `json:"fields"`
		InputFields   []inputValue `json:"inputFields"`
		Interfaces    []typeRef    `json:"interfaces"`
		EnumValues    []enumValue  `json:"enumValues"`
		PossibleTypes []typeRef    `json:"possibleTypes"`
	}
	introField struct {
		Name              string       `json:"name"`
		Description       string       `json:"description"`
		Args              []inputValue `json:"args"`
		Type              *typeRef     `json:"type"`
		IsDeprecated      bool         `json:"isDeprecated"`
		DeprecationReason *string      `json:"deprecationReason"`
	}
	inputValue struct {
		Name              string   `json:"name"`
		Description       string   `json:"description"`
		Type              *typeRef `json:"type"`
		DefaultValue      *string  `json:"defaultValue"`
		IsDeprecated      bool     `json:"isDeprecated"`
		DeprecationReason *string  `json:"deprecationReason"`
	}
	enumValue struct {
		Name              string  `json:"name"`
		Description       string  `json:"description"`
		IsDeprecated      bool    `json:"isDeprecated"`
		DeprecationReason *string `json:"deprecationReason"`
	}
	typeRef struct {
		Kind   string   `json:"kind"`
		Name   string   `json:"name"`
		OfType *typeRef `json:"ofType"`
	}
)

// introspectionSDL writes the schema an introspection result describes as
// SDL, which then goes through the same loading as SDL a person gives.
func introspectionSDL(result []byte) (string, error) {
	var doc struct {
		Data *struct {
			Schema *introspectionSchema `json:"__schema"`
		} `json:"data"`
		Schema *introspectionSchema `json:"__schema"`
	}
	trimmed := bytes.TrimSpace(result)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "", errors.New("the introspection result is not a JSON object")
	}
	if err := json.Unmarshal(trimmed, &doc); err != nil {
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) {
			return "", fmt.Errorf("the introspection result is not valid JSON (at byte %d): %v", syntaxErr.Offset, err)
		}
		return "", fmt.Errorf("the JSON is not a GraphQL introspection result: %v", err)
	}
	schema := doc.Schema
	if schema == nil && doc.Data != nil {
		schema = doc.Data.Schema
	}
	if schema == nil {
		return "", errors.New(`the JSON is not a GraphQL introspection result: expected {"data":{"__schema":...}} or {"__schema":...}`)
	}
	if schema.QueryType == nil || schema.QueryType.Name == "" {
		return "", errors.New("the introspection result names no query type (__schema.queryType)")
	}
	w := &sdlWriter{}
	w.schema(schema)
	if w.err != nil {
		return "", fmt.Errorf("the introspection result does not describe a valid schema: %w", w.err)
	}
	return w.b.String(), nil
}

type sdlWriter struct {
	b   strings.Builder
	err error
}

func (w *sdlWriter) schema(s *introspectionSchema) {
	w.b.WriteString("schema {\n  query: " + s.QueryType.Name + "\n")
	if s.MutationType != nil && s.MutationType.Name != "" {
		w.b.WriteString("  mutation: " + s.MutationType.Name + "\n")
	}
	if s.SubscriptionType != nil && s.SubscriptionType.Name != "" {
		w.b.WriteString("  subscription: " + s.SubscriptionType.Name + "\n")
	}
	w.b.WriteString("}\n")
	for _, t := range s.Types {
		if strings.HasPrefix(t.Name, "__") {
			continue
		}
		w.typeDef(t)
	}
}

func (w *sdlWriter) typeDef(t introType) {
	w.b.WriteByte('\n')
	w.description(t.Description, "")
	switch t.Kind {
	case "SCALAR":
		w.b.WriteString("scalar " + t.Name + "\n")
	case "OBJECT", "INTERFACE":
		if t.Kind == "OBJECT" {
			w.b.WriteString("type " + t.Name)
		} else {
			w.b.WriteString("interface " + t.Name)
		}
		for i, in := range t.Interfaces {
			if i == 0 {
				w.b.WriteString(" implements ")
			} else {
				w.b.WriteString(" & ")
			}
			w.b.WriteString(w.typeName(&in))
		}
		w.b.WriteString(" {\n")
		for _, f := range t.Fields {
			w.description(f.Description, "  ")
			w.b.WriteString("  " + f.Name)
			if len(f.Args) > 0 {
				w.b.WriteByte('(')
				for i, a := range f.Args {
					if i > 0 {
						w.b.WriteString(", ")
					}
					if a.Description != "" {
						w.b.WriteString(quote(a.Description) + " ")
					}
					w.inputValue(a)
				}
				w.b.WriteByte(')')
			}
			w.b.WriteString(": " + w.typeName(f.Type))
			w.deprecated(f.IsDeprecated, f.DeprecationReason)
			w.b.WriteByte('\n')
		}
		w.b.WriteString("}\n")
	case "UNION":
		w.b.WriteString("union " + t.Name + " =")
		for i, p := range t.PossibleTypes {
			if i > 0 {
				w.b.WriteString(" |")
			}
			w.b.WriteString(" " + w.typeName(&p))
		}
		w.b.WriteByte('\n')
	case "ENUM":
		w.b.WriteString("enum " + t.Name + " {\n")
		for _, v := range t.EnumValues {
			w.description(v.Description, "  ")
			w.b.WriteString("  " + v.Name)
			w.deprecated(v.IsDeprecated, v.DeprecationReason)
			w.b.WriteByte('\n')
		}
		w.b.WriteString("}\n")
	case "INPUT_OBJECT":
		w.b.WriteString("input " + t.Name + " {\n")
		for _, f := range t.InputFields {
			w.description(f.Description, "  ")
			w.b.WriteString("  ")
			w.inputValue(f)
			w.b.WriteByte('\n')
		}
		w.b.WriteString("}\n")
	default:
		w.fail(fmt.Errorf("type %s has the unknown kind %q", t.Name, t.Kind))
	}
}

// inputValue writes an argument or input field: name, type, default.
func (w *sdlWriter) inputValue(v inputValue) {
	w.b.WriteString(v.Name + ": " + w.typeName(v.Type))
	if v.DefaultValue != nil {
		w.b.WriteString(" = " + *v.DefaultValue)
	}
	w.deprecated(v.IsDeprecated, v.DeprecationReason)
}

func (w *sdlWriter) deprecated(is bool, reason *string) {
	if !is {
		return
	}
	w.b.WriteString(" @deprecated")
	if reason != nil {
		w.b.WriteString("(reason: " + quote(*reason) + ")")
	}
}

func (w *sdlWriter) description(d, indent string) {
	if d != "" {
		w.b.WriteString(indent + quote(d) + "\n")
	}
}

// typeName spells a type reference: NON_NULL adds "!", LIST brackets.
func (w *sdlWriter) typeName(t *typeRef) string { return w.typeRef(t, 0) }

func (w *sdlWriter) typeRef(t *typeRef, depth int) string {
	switch {
	case t == nil || depth > 32:
	case t.Kind == "NON_NULL":
		return w.typeRef(t.OfType, depth+1) + "!"
	case t.Kind == "LIST":
		return "[" + w.typeRef(t.OfType, depth+1) + "]"
	case t.Name != "":
		return t.Name
	}
	w.fail(errors.New("a type reference has no name; ask the introspection query for deeper ofType nesting"))
	return "Unknown"
}

func (w *sdlWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// quote writes s as a GraphQL string literal.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
