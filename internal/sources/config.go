package sources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/internal/validation"
)

// Type is the kind of a source.
type Type string

// Source types.
const (
	TypeMCP     Type = "mcp"
	TypeOpenAPI Type = "openapi"
	TypeGraphQL Type = "graphql"
)

// Valid reports whether t is a known type.
func (t Type) Valid() bool { return t == TypeMCP || t == TypeOpenAPI || t == TypeGraphQL }

// Scope says who sees a source.
type Scope string

// Source scopes.
const (
	ScopeWorkspace    Scope = "workspace"
	ScopeOrganization Scope = "organization"
)

// ConfigVersion is the version of the configuration shapes below; it is
// stored with every source so later shapes can be migrated.
const ConfigVersion = 1

// MCP transports.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// MCPConfig reaches an MCP server.
type MCPConfig struct {
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// ConnectTimeoutSeconds and CallTimeoutSeconds (1..600) override how
	// long a call waits for the server to start and initialize, and for
	// one tools/call to answer; 0 keeps the gateway's defaults.
	ConnectTimeoutSeconds int `json:"connectTimeoutSeconds,omitempty"`
	CallTimeoutSeconds    int `json:"callTimeoutSeconds,omitempty"`
}

// MaxTimeoutSeconds is the longest per-source MCP timeout.
const MaxTimeoutSeconds = 600

// OpenAPIConfig holds an OpenAPI 3.x or Swagger 2.0 description.
type OpenAPIConfig struct {
	// Spec is a URL (a JSON string starting with http:// or https://), or
	// the document itself: a JSON object, or JSON or YAML text.
	Spec json.RawMessage `json:"spec"`
	// BaseURL overrides the document's servers.
	BaseURL string `json:"baseUrl,omitempty"`
}

// SpecURL returns the spec's URL when the spec is given by URL.
func (c OpenAPIConfig) SpecURL() string {
	var s string
	if json.Unmarshal(c.Spec, &s) == nil && isHTTPURL(s) {
		return s
	}
	return ""
}

// SpecDocument returns an inline spec's bytes (JSON or YAML), or nil.
func (c OpenAPIConfig) SpecDocument() []byte {
	if c.SpecURL() != "" || len(c.Spec) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(c.Spec, &s) == nil {
		return []byte(s)
	}
	return c.Spec
}

// GraphQLConfig reaches a GraphQL endpoint; Schema, when set, is SDL or an
// introspection result used instead of introspecting the endpoint.
type GraphQLConfig struct {
	Endpoint string `json:"endpoint,omitempty"`
	Schema   string `json:"schema,omitempty"`
}

// Config is one of *MCPConfig, *OpenAPIConfig, *GraphQLConfig.
type Config interface{ sourceType() Type }

func (*MCPConfig) sourceType() Type     { return TypeMCP }
func (*OpenAPIConfig) sourceType() Type { return TypeOpenAPI }
func (*GraphQLConfig) sourceType() Type { return TypeGraphQL }

// Rules are the instance's limits on configuration.
type Rules struct {
	// AllowStdio permits MCP sources that run commands on the server.
	AllowStdio bool
	// MaxInlineSpec is the largest inline spec accepted, in bytes.
	MaxInlineSpec int
}

// MaxSpecBytes is the largest spec fetched or accepted inline: 64 MiB.
const MaxSpecBytes = 64 << 20

var (
	envNamePattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNamePattern = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
)

// ParseConfig decodes, checks and normalizes a configuration of type typ.
// Every problem is a field error under "config.<field>"; unknown and
// ill-typed fields are refused, never ignored.
func ParseConfig(typ Type, raw json.RawMessage, rules Rules) (Config, validation.Errors) {
	e := validation.Errors{}
	if rules.MaxInlineSpec == 0 {
		rules.MaxInlineSpec = MaxSpecBytes
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		e.Add("config", "Enter the source's configuration.")
		return nil, e
	}
	switch typ {
	case TypeMCP:
		var c MCPConfig
		if !decodeStrict(raw, &c, e) {
			return nil, e
		}
		c.normalize()
		c.check(e, rules)
		return &c, e
	case TypeOpenAPI:
		var c OpenAPIConfig
		if !decodeStrict(raw, &c, e) {
			return nil, e
		}
		c.check(e, rules)
		return &c, e
	case TypeGraphQL:
		var c GraphQLConfig
		var loose struct {
			Endpoint string          `json:"endpoint"`
			Schema   json.RawMessage `json:"schema"`
		}
		if !decodeStrict(raw, &loose, e) {
			return nil, e
		}
		c.Endpoint = strings.TrimSpace(loose.Endpoint)
		if s, ok := schemaText(loose.Schema); ok {
			c.Schema = s
		} else {
			e.Add("config.schema", "Give the schema as SDL text or as an introspection result (JSON).")
		}
		c.check(e, rules)
		return &c, e
	}
	e.Add("type", "Choose mcp, openapi or graphql.")
	return nil, e
}

// schemaText accepts a GraphQL schema as a string or as a JSON object.
func schemaText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s), true
	}
	if raw[0] == '{' {
		return string(raw), true
	}
	return "", false
}

// decodeStrict decodes raw into v, turning unknown or ill-typed fields into
// field errors.
func decodeStrict(raw json.RawMessage, v any, e validation.Errors) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, more := dec.Token(); more != io.EOF {
			e.Add("config", "Unexpected data after the configuration object.")
			return false
		}
		return true
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := "config"
		if typeErr.Field != "" {
			field += "." + typeErr.Field
		}
		e.Add(field, fmt.Sprintf("Must be %s, not %s.", describeGoType(typeErr.Type.Kind().String()), typeErr.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		e.Add("config."+name, "Unknown field "+name+".")
	case errors.As(err, &syntaxErr):
		e.Add("config", fmt.Sprintf("Not valid JSON (at byte %d): %v.", syntaxErr.Offset, err))
	default:
		e.Add("config", "Not a JSON object: "+err.Error()+".")
	}
	return false
}

func describeGoType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice":
		return "a list"
	case "map", "struct":
		return "an object"
	case "bool":
		return "true or false"
	case "int":
		return "a whole number"
	}
	return "a " + kind
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func checkURL(e validation.Errors, field, s string, required bool) {
	switch {
	case s == "" && required:
		e.Add(field, "Enter a URL.")
	case s != "" && !isHTTPURL(s):
		e.Add(field, "Enter an absolute http:// or https:// URL.")
	case len(s) > 2048:
		e.Add(field, "Use at most 2048 characters.")
	}
}

func (c *MCPConfig) normalize() {
	c.Transport = strings.ToLower(strings.TrimSpace(c.Transport))
	if c.Transport == "http" || c.Transport == "streamable_http" || c.Transport == "streamablehttp" {
		c.Transport = TransportStreamableHTTP
	}
	c.Command = strings.TrimSpace(c.Command)
	c.URL = strings.TrimSpace(c.URL)
	c.Cwd = strings.TrimSpace(c.Cwd)
	if len(c.Env) == 0 {
		c.Env = nil
	}
	if len(c.Headers) == 0 {
		c.Headers = nil
	}
	if len(c.Args) == 0 {
		c.Args = nil
	}
}

func (c *MCPConfig) check(e validation.Errors, rules Rules) {
	for _, t := range []struct {
		field string
		v     int
	}{{"config.connectTimeoutSeconds", c.ConnectTimeoutSeconds}, {"config.callTimeoutSeconds", c.CallTimeoutSeconds}} {
		if t.v < 0 || t.v > MaxTimeoutSeconds {
			e.Add(t.field, fmt.Sprintf("Use a whole number of seconds from 1 to %d, or leave it empty for the default.", MaxTimeoutSeconds))
		}
	}
	switch c.Transport {
	case TransportStdio:
		if c.Command == "" {
			e.Add("config.command", "Enter the command that starts the server.")
		}
		if !rules.AllowStdio {
			e.Add("config.transport", "Stdio sources run commands on this server and are turned off here; an operator can allow them with TOOLGATE_ALLOW_STDIO=true.")
		}
		if c.URL != "" || len(c.Headers) > 0 {
			e.Add("config.url", "A stdio server takes a command, not a URL or headers.")
		}
		if c.Cwd != "" && !filepath.IsAbs(c.Cwd) {
			e.Add("config.cwd", "Use an absolute directory.")
		}
		for k := range c.Env {
			if !envNamePattern.MatchString(k) {
				e.Add("config.env", fmt.Sprintf("%q is not a valid environment variable name.", k))
			}
		}
	case TransportStreamableHTTP, TransportSSE:
		checkURL(e, "config.url", c.URL, true)
		if c.Command != "" || len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != "" {
			e.Add("config.command", "A remote server takes a URL and headers, not a command.")
		}
		for k, v := range c.Headers {
			if !headerNamePattern.MatchString(k) {
				e.Add("config.headers", fmt.Sprintf("%q is not a valid header name.", k))
			}
			if strings.ContainsAny(v, "\r\n") {
				e.Add("config.headers", fmt.Sprintf("The value of %s must be one line.", k))
			}
		}
	case "":
		e.Add("config.transport", "Choose stdio, streamable-http or sse.")
	default:
		e.Add("config.transport", fmt.Sprintf("Unknown transport %q: choose stdio, streamable-http or sse.", c.Transport))
	}
}

func (c *OpenAPIConfig) check(e validation.Errors, rules Rules) {
	c.BaseURL = strings.TrimSpace(c.BaseURL)
	checkURL(e, "config.baseUrl", c.BaseURL, false)
	raw := bytes.TrimSpace(c.Spec)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == `""` {
		e.Add("config.spec", "Give the spec's URL or paste the document.")
		return
	}
	if len(raw) > rules.MaxInlineSpec {
		e.Add("config.spec", fmt.Sprintf("The document is larger than the %d MiB limit.", rules.MaxInlineSpec>>20))
		return
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			e.Add("config.spec", "Must be a URL, a JSON object or the document as text.")
			return
		}
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
			checkURL(e, "config.spec", s, true)
		}
		c.Spec, _ = json.Marshal(s)
	case '{':
		c.Spec = raw
	default:
		e.Add("config.spec", "Must be a URL, a JSON object or the document as text.")
	}
}

func (c *GraphQLConfig) check(e validation.Errors, rules Rules) {
	checkURL(e, "config.endpoint", c.Endpoint, c.Schema == "")
	if c.Endpoint == "" && c.Schema == "" {
		e.Add("config.endpoint", "Enter the endpoint URL, or give its schema.")
	}
	if len(c.Schema) > rules.MaxInlineSpec {
		e.Add("config.schema", fmt.Sprintf("The schema is larger than the %d MiB limit.", rules.MaxInlineSpec>>20))
	}
}

// secretKey matches names of values that are probably secrets.
var secretKey = regexp.MustCompile(`(?i)(token|secret|passw|pwd|api[-_]?key|apikey|auth|credential|private|session|cookie|bearer|signature|access[-_]?key)`)

// LooksSecret reports whether a key's value is probably a secret.
func LooksSecret(key string) bool { return secretKey.MatchString(key) }

// Mask is shown instead of a secret-looking value; sending it back keeps
// the stored value.
const Mask = "••••••••"

// Masked returns the configuration with secret-looking env and header
// values replaced by [Mask], for pages and API answers.
func Masked(c Config) Config {
	m, ok := c.(*MCPConfig)
	if !ok {
		return c
	}
	out := *m
	out.Env = maskMap(m.Env)
	out.Headers = maskMap(m.Headers)
	return &out
}

func maskMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		if LooksSecret(k) && v != "" {
			v = Mask
		}
		out[k] = v
	}
	return out
}

// KeepMasked restores stored values where an edit sent [Mask] back.
func KeepMasked(edited, stored Config) {
	e, ok1 := edited.(*MCPConfig)
	s, ok2 := stored.(*MCPConfig)
	if !ok1 || !ok2 {
		return
	}
	for k, v := range e.Env {
		if v == Mask {
			e.Env[k] = s.Env[k]
		}
	}
	for k, v := range e.Headers {
		if v == Mask {
			e.Headers[k] = s.Headers[k]
		}
	}
}

// SecretKeys lists the secret-looking env and header names of a
// configuration: the values Part 4 moves into credentials.
func SecretKeys(c Config) []string {
	m, ok := c.(*MCPConfig)
	if !ok {
		return nil
	}
	var keys []string
	for k := range m.Env {
		if LooksSecret(k) {
			keys = append(keys, "env."+k)
		}
	}
	for k := range m.Headers {
		if LooksSecret(k) {
			keys = append(keys, "headers."+k)
		}
	}
	sort.Strings(keys)
	return keys
}

// SplitSecrets moves the secret-looking env and header values out of an MCP
// configuration: it returns the configuration without them and the moved
// values keyed "env.NAME" or "headers.NAME", which become the source's
// credential. Other configurations come back as they are.
func SplitSecrets(c Config) (Config, map[string]string) {
	m, ok := c.(*MCPConfig)
	if !ok {
		return c, nil
	}
	out := *m
	moved := map[string]string{}
	out.Env = splitMap(m.Env, "env.", moved)
	out.Headers = splitMap(m.Headers, "headers.", moved)
	if len(moved) == 0 {
		return c, nil
	}
	return &out, moved
}

func splitMap(in map[string]string, prefix string, moved map[string]string) map[string]string {
	var keep map[string]string
	for k, v := range in {
		if LooksSecret(k) && v != "" && v != Mask {
			moved[prefix+k] = v
			continue
		}
		if keep == nil {
			keep = map[string]string{}
		}
		keep[k] = v
	}
	return keep
}

// AuthFingerprint hashes the parts of a configuration that authenticate.
func AuthFingerprint(c Config) string {
	m, ok := c.(*MCPConfig)
	if !ok {
		return Hash(nil)
	}
	b, _ := json.Marshal(struct {
		Env     map[string]string `json:"env"`
		Headers map[string]string `json:"headers"`
	}{m.Env, m.Headers})
	return Hash(b)
}
