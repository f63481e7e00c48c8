// Package sources is the model of tool sources: their typed configuration
// and its validation, the tool and discovery types every adapter (mcp,
// openapi, graphql) produces, and the naming rules that turn upstream names
// into stable MCP tool paths.
package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Approval is a tool's default approval before any policy applies.
type Approval string

// Default approvals.
const (
	ApprovalAuto     Approval = "auto"
	ApprovalRequired Approval = "required"
)

// Annotations are MCP's tool hints; nil means unknown.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool is one callable operation of a source.
type Tool struct {
	// Path is "namespace.name", assigned by [AssignPaths]; adapters leave it empty.
	Path string `json:"path"`
	// Name is the adapter's name within the namespace, e.g. "repos.get",
	// "query.viewer" or an MCP tool's name. [AssignPaths] makes it valid.
	Name string `json:"name"`
	// Aliases are other spellings accepted when looking the tool up.
	Aliases     []string `json:"aliases,omitempty"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	// InputSchema is a JSON Schema object; OutputSchema may be empty.
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  Annotations     `json:"annotations"`
	// DefaultApproval is auto or required.
	DefaultApproval Approval `json:"default_approval"`
	// Ref points back at the upstream operation: for OpenAPI
	// {"operation_id","method","path"}, for GraphQL {"operation","field"},
	// for MCP {"tool"}.
	Ref json.RawMessage `json:"ref"`
}

// Warning is something discovery skipped or repaired, said for a person.
type Warning struct {
	// Subject names what it is about, e.g. "GET /repos/{owner}/{repo}".
	Subject string `json:"subject"`
	Message string `json:"message"`
}

// AuthProfile is the authentication a source's upstream expects, inferred
// from its description (OpenAPI securitySchemes) or configuration.
type AuthProfile struct {
	// Type is none, bearer, apiKey, basic or oauth2.
	Type string `json:"type"`
	// In is header or query for apiKey; Name is the header or parameter.
	In   string `json:"in,omitempty"`
	Name string `json:"name,omitempty"`
	// Scheme is the HTTP auth scheme for bearer, e.g. "Bearer".
	Scheme string `json:"scheme,omitempty"`
	// Note says what a person should know, e.g. that OAuth 2 comes later.
	Note string `json:"note,omitempty"`
}

// Discovery is what one discovery run found.
type Discovery struct {
	Tools []Tool
	// SpecHash hashes the fetched spec, introspection result or tool list.
	SpecHash string
	Warnings []Warning
	// AuthProfile is nil when nothing could be inferred.
	AuthProfile *AuthProfile
	// BaseURL is where calls go (OpenAPI servers, GraphQL endpoint, MCP URL).
	BaseURL string
	// ETag of a spec fetched by URL, for conditional refreshes.
	ETag string
	// Server names the upstream, e.g. an MCP server's name and version.
	Server string
}

// Hash is the content hash used for spec_hash and auth_fingerprint.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Quality measures how well a source describes its tools, as shares of its
// tools in [0, 1].
type Quality struct {
	TypedArguments float64 `json:"typed_arguments"`
	TypedResult    float64 `json:"typed_result"`
	Described      float64 `json:"described"`
}

// Measure computes the quality of a tool set.
func Measure(tools []Tool) Quality {
	if len(tools) == 0 {
		return Quality{}
	}
	var args, result, described int
	for _, t := range tools {
		if typedArguments(t.InputSchema) {
			args++
		}
		if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" && string(t.OutputSchema) != "{}" {
			result++
		}
		if t.Description != "" {
			described++
		}
	}
	n := float64(len(tools))
	return Quality{TypedArguments: float64(args) / n, TypedResult: float64(result) / n, Described: float64(described) / n}
}

// typedArguments reports whether every argument of an input schema has a
// type (a tool without arguments counts as typed).
func typedArguments(schema json.RawMessage) bool {
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || s.Type == nil {
		return false
	}
	for _, p := range s.Properties {
		var prop map[string]json.RawMessage
		if json.Unmarshal(p, &prop) != nil {
			return false
		}
		_, typ := prop["type"]
		_, enum := prop["enum"]
		_, ref := prop["$ref"]
		_, one := prop["oneOf"]
		_, any := prop["anyOf"]
		_, all := prop["allOf"]
		_, cnst := prop["const"]
		if !typ && !enum && !ref && !one && !any && !all && !cnst {
			return false
		}
	}
	return true
}
