// Package openapi turns an OpenAPI 3.0 or 3.1 description, or a Swagger
// 2.0 one, into toolgate tools: one per operation, with a single JSON
// Schema object for its inputs, the preferred success response as its
// output schema, and a [Ref] the gateway serializes calls from.
//
// The document is decoded once into generic values and walked directly;
// local $refs are resolved with memoization and inlined, recursion is cut
// with a marker. Swagger 2.0 is first converted to 3.0 with kin-openapi.
package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/internal/sources"
)

// Options tune Build.
type Options struct {
	BaseURL   string // overrides the document's servers when set
	SourceURL string // where the document was fetched, to resolve relative server URLs; "" for inline documents
}

// Build turns an OpenAPI 3.0 / 3.1 or Swagger 2.0 document (JSON or YAML
// bytes) into tools. Tools come sorted by path then method; their paths are
// left for [sources.AssignPaths]. An operation that cannot be used is
// skipped with a warning; Build fails only when the document as a whole
// cannot be used, with an error that says why in a sentence.
func Build(doc []byte, opts Options) (*sources.Discovery, error) {
	if len(doc) > sources.MaxSpecBytes {
		return nil, fmt.Errorf("the document is larger than the %d MiB limit", sources.MaxSpecBytes>>20)
	}
	root, err := load(doc)
	if err != nil {
		return nil, err
	}
	b := &builder{res: newResolver(root.doc), root: root.doc, swagger: root.swaggerOps, sourceURL: opts.SourceURL}
	for _, s := range root.skipped {
		b.skip(s.subject, s.err)
	}
	b.exp = newExpander(b.res)
	disc := &sources.Discovery{SpecHash: sources.Hash(doc)}
	if root.swagger != nil {
		b.docScheme = swaggerScheme(root.swagger, opts.SourceURL)
	}
	disc.BaseURL = b.baseURL(root, opts)
	b.base, b.overridden = disc.BaseURL, strings.TrimSpace(opts.BaseURL) != ""
	disc.AuthProfile = b.authProfile()
	if disc.Tools, err = b.tools(); err != nil {
		return nil, err
	}
	if b.ownServers > 0 {
		b.warn("servers", fmt.Sprintf("%d operations name servers of their own; the base URL set for the source takes their calls too", b.ownServers))
	}
	disc.Warnings = b.warnings
	return disc, nil
}

// document is a decoded description, as OpenAPI 3.x.
type document struct {
	doc map[string]any
	// swagger is the original Swagger 2.0 document when doc was converted
	// from it (its host, basePath and schemes give the base URL).
	swagger map[string]any
	// swaggerOps are what the conversion loses of each operation, by
	// subject ("POST /pets").
	swaggerOps map[string]swaggerOp
	// skipped are the operations the conversion had to leave out.
	skipped []skipped
}

// skipped is an operation (or path item) left out, and why.
type skipped struct {
	subject string
	err     error
}

// load decodes a document, checks its version and converts Swagger 2.0.
func load(raw []byte) (document, error) {
	v, err := decode(raw)
	if err != nil {
		return document{}, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return document{}, fmt.Errorf("the document is not an OpenAPI description: its top level is %s, not an object", kind(v))
	}
	openapi, hasOpenAPI := doc["openapi"]
	swagger, hasSwagger := doc["swagger"]
	switch {
	case hasOpenAPI:
		version := versionText(openapi)
		if !supported(version) {
			return document{}, fmt.Errorf("unsupported OpenAPI version %q: toolgate reads OpenAPI 3.0 and 3.1, and Swagger 2.0", version)
		}
		return document{doc: doc}, nil
	case hasSwagger:
		version := versionText(swagger)
		if version != "2.0" {
			return document{}, fmt.Errorf("unsupported Swagger version %q: toolgate reads Swagger 2.0, and OpenAPI 3.0 and 3.1", version)
		}
		converted, left, err := fromSwagger(doc)
		if err != nil {
			return document{}, err
		}
		return document{doc: converted, swagger: doc, swaggerOps: swaggerOperations(doc), skipped: left}, nil
	}
	return document{}, errors.New(`the document is not an OpenAPI description: it has neither an "openapi" nor a "swagger" version field`)
}

// versionText is a version field as text (YAML may read 3.1 as a number).
func versionText(v any) string {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(t)
	case json.Number:
		return t.String()
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// supported reports whether an "openapi" version is 3.0.x or 3.1.x.
func supported(version string) bool {
	for _, minor := range []string{"3.0", "3.1"} {
		if version == minor || strings.HasPrefix(version, minor+".") {
			return true
		}
	}
	return false
}

// builder holds one build's state.
type builder struct {
	root map[string]any
	res  *resolver
	exp  *expander
	enc  encoder
	// swagger holds what Swagger 2.0's conversion loses, per operation.
	swagger map[string]swaggerOp
	// sourceURL is where the document came from; base is the source's
	// base URL, overridden when the source sets it; ownServers counts
	// the operations with servers of their own that an override takes.
	sourceURL, base string
	overridden      bool
	ownServers      int
	// docScheme is the scheme of a Swagger 2.0 document's own base URL,
	// which an operation's schemes may leave out.
	docScheme string
	warnings  []sources.Warning
	// firstSkip is the first operation left out, for the error when none
	// is left.
	firstSkip error
}

// warn records something skipped or repaired.
func (b *builder) warn(subject, message string) {
	b.warnings = append(b.warnings, sources.Warning{Subject: subject, Message: message})
}

// skip records an operation (or a path item) left out.
func (b *builder) skip(subject string, err error) {
	b.warn(subject, "skipped: "+err.Error())
	if b.firstSkip == nil {
		b.firstSkip = fmt.Errorf("%s: %w", subject, err)
	}
}

// tools builds a tool per operation, sorted by path then method.
func (b *builder) tools() ([]sources.Tool, error) {
	ops := b.operations()
	if len(ops) == 0 && b.firstSkip == nil {
		if _, hooks := b.root["webhooks"]; hooks {
			return nil, errors.New("the document has no operations: it describes only webhooks, which are not tools")
		}
		return nil, errors.New("the document has no operations")
	}
	tools := make([]sources.Tool, 0, len(ops))
	ids := map[string]string{}
	for _, o := range ops {
		t, err := b.tool(o)
		if err != nil {
			b.skip(o.subject(), err)
			continue
		}
		b.checkOperationID(o, ids)
		tools = append(tools, t)
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("no operation could be turned into a tool; the first one failed at %w", b.firstSkip)
	}
	return tools, nil
}

// checkOperationID warns when an operationId was used before.
func (b *builder) checkOperationID(o operation, ids map[string]string) {
	id := str(o.op["operationId"])
	if id == "" {
		return
	}
	if first, dup := ids[id]; dup {
		b.warn(o.subject(), fmt.Sprintf("operationId %q is also used by %s; the tools get distinct paths", id, first))
		return
	}
	ids[id] = o.subject()
}

// operations lists the document's operations sorted by path then method.
// Path items that cannot be read are skipped with a warning.
func (b *builder) operations() []operation {
	paths, _ := b.root["paths"].(map[string]any)
	keys := make([]string, 0, len(paths))
	for p := range paths {
		if strings.HasPrefix(p, "/") {
			keys = append(keys, p)
		}
	}
	sort.Strings(keys)
	var ops []operation
	for _, path := range keys {
		item, err := b.res.object(paths[path])
		if err != nil {
			b.skip(path, err)
			continue
		}
		common, _ := item["parameters"].([]any)
		for _, method := range []string{"delete", "get", "head", "options", "patch", "post", "put", "trace"} {
			raw, ok := item[method]
			if !ok {
				continue
			}
			o := operation{path: path, method: method}
			if o.op, ok = raw.(map[string]any); !ok {
				b.skip(o.subject(), fmt.Errorf("the operation is %s, not an object", kind(raw)))
				continue
			}
			own, _ := o.op["parameters"].([]any)
			o.params = append(slices.Clip(common), own...)
			o.servers = item["servers"]
			if list, _ := o.op["servers"].([]any); len(list) > 0 {
				o.servers = list
			}
			if servers := b.ownScheme(b.swagger[o.subject()].schemes); servers != nil {
				o.servers = servers
			}
			ops = append(ops, o)
		}
	}
	return ops
}
