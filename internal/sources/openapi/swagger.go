package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
)

// fromSwagger converts a decoded Swagger 2.0 document to OpenAPI 3.0 with
// kin-openapi and decodes the result like any 3.0 document. Swagger
// documents are small, so the round trips through JSON cost little.
//
// kin-openapi refuses a whole document over one broken $ref, so operations
// that use one are taken out first, each with a warning, as they would be
// skipped in a 3.x document.
func fromSwagger(doc map[string]any) (map[string]any, []skipped, error) {
	doc, left := withoutBrokenRefs(doc)
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("the Swagger 2.0 document could not be read: %w", err)
	}
	var v2 openapi2.T
	if err := json.Unmarshal(raw, &v2); err != nil {
		return nil, nil, fmt.Errorf("the Swagger 2.0 document could not be read: %w", err)
	}
	v3, err := openapi2conv.ToV3(&v2)
	if err != nil {
		return nil, nil, fmt.Errorf("the Swagger 2.0 document could not be converted to OpenAPI 3.0: %w", err)
	}
	if raw, err = json.Marshal(v3); err != nil {
		return nil, nil, fmt.Errorf("the Swagger 2.0 document could not be converted to OpenAPI 3.0: %w", err)
	}
	converted, err := decodeJSON(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("the Swagger 2.0 document could not be converted to OpenAPI 3.0: %w", err)
	}
	out, _ := converted.(map[string]any)
	return out, left, nil
}

// withoutBrokenRefs returns a copy of a Swagger 2.0 document without the
// operations and shared definitions that reach a $ref that does not
// resolve (directly or through other references), and the operations taken
// out. The document itself is not changed.
func withoutBrokenRefs(doc map[string]any) (map[string]any, []skipped) {
	check := findBrokenRefs(doc)
	if len(check.culprit) == 0 {
		return doc, nil
	}
	out := maps.Clone(doc)
	for _, section := range []string{"definitions", "parameters", "responses"} {
		if entries, ok := doc[section].(map[string]any); ok {
			out[section] = check.keep(entries)
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	kept := make(map[string]any, len(paths))
	var left []skipped
	for _, path := range sortedKeys(paths) {
		item, ok := paths[path].(map[string]any)
		if !ok {
			kept[path] = paths[path]
			continue
		}
		item = maps.Clone(item)
		common := check.broken(item["parameters"])
		for _, method := range []string{"delete", "get", "head", "options", "patch", "post", "put"} {
			op, has := item[method]
			if !has {
				continue
			}
			ref := common
			if ref == "" {
				ref = check.broken(op)
			}
			if ref != "" {
				delete(item, method)
				left = append(left, skipped{subject: operation{path: path, method: method}.subject(), err: check.reason(ref)})
			}
		}
		if common == "" {
			kept[path] = item
		}
	}
	out["paths"] = kept
	return out, left
}

// brokenRefs knows, for every reference of a document that does not
// resolve or reaches one that does not, the unresolvable one it reaches.
type brokenRefs struct {
	res     *resolver
	culprit map[string]string
}

// findBrokenRefs propagates unresolvable references backwards along the
// graph of references until nothing changes (cycles included).
func findBrokenRefs(doc map[string]any) brokenRefs {
	c := brokenRefs{res: newResolver(doc), culprit: map[string]string{}}
	var refs []string
	seen := map[string]bool{}
	queue := slices.Sorted(slices.Values(collectRefs(doc, nil)))
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		if seen[ref] {
			continue
		}
		seen[ref] = true
		refs = append(refs, ref)
		if _, err := c.res.resolve(ref); err != nil {
			c.culprit[ref] = ref
		}
		queue = append(queue, c.res.cycles.refsOf(ref)...)
	}
	for changed := len(c.culprit) > 0; changed; {
		changed = false
		for _, ref := range refs {
			if _, bad := c.culprit[ref]; bad {
				continue
			}
			for _, next := range c.res.cycles.refsOf(ref) {
				if culprit, bad := c.culprit[next]; bad {
					c.culprit[ref] = culprit
					changed = true
					break
				}
			}
		}
	}
	return c
}

// keep returns the entries of a shared section that reach no broken
// reference.
func (c brokenRefs) keep(entries map[string]any) map[string]any {
	out := make(map[string]any, len(entries))
	for name, v := range entries {
		if c.broken(v) == "" {
			out[name] = v
		}
	}
	return out
}

// broken returns the first (in sorted order) unresolvable reference a
// value reaches, or "".
func (c brokenRefs) broken(v any) string {
	first := ""
	for _, ref := range collectRefs(v, nil) {
		if culprit, bad := c.culprit[ref]; bad && (first == "" || culprit < first) {
			first = culprit
		}
	}
	return first
}

// reason says why a reference does not resolve.
func (c brokenRefs) reason(ref string) error {
	if _, err := c.res.resolve(ref); err != nil {
		return err
	}
	return &refError{ref, "does not resolve"}
}

// swaggerOp is what converting a Swagger 2.0 operation to OpenAPI 3.0
// loses and the builder puts back: kin-openapi keeps collectionFormat only
// for query arrays that name one (csv, the default, is lost, and tsv has
// no OpenAPI 3 style), and a formData body is never required.
type swaggerOp struct {
	// styles are the serializations of array parameters, by name and
	// location.
	styles map[[2]string]style
	// form is set when the operation takes formData parameters.
	form *swaggerForm
	// schemes are the operation's own schemes that HTTP calls can use
	// (http, https), which override the document's; kin-openapi drops
	// them.
	schemes []string
}

// style is the serialization of a parameter or a form field.
type style struct {
	name    string
	explode bool
}

// swaggerForm is what an operation's formData parameters make of its body:
// its media types, whether it is required (when a field is), and the
// styles of its array fields.
type swaggerForm struct {
	types    []string
	required bool
	fields   map[string]style
}

// swaggerOperations reads, for each operation of a Swagger 2.0 document by
// subject ("POST /pets"), what the conversion to 3.0 loses. Parameters are
// the path item's and the operation's, the operation's winning.
func swaggerOperations(doc map[string]any) map[string]swaggerOp {
	res := newResolver(doc)
	paths, _ := doc["paths"].(map[string]any)
	out := map[string]swaggerOp{}
	for path, raw := range paths {
		item, err := res.object(raw)
		if err != nil {
			continue
		}
		common, _ := item["parameters"].([]any)
		for _, method := range []string{"delete", "get", "head", "options", "patch", "post", "put"} {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			own, _ := op["parameters"].([]any)
			consumes, set := op["consumes"].([]any)
			if !set {
				consumes, _ = doc["consumes"].([]any)
			}
			sw := swaggerOperation(res, append(slices.Clip(common), own...), consumes)
			schemes, _ := op["schemes"].([]any)
			for _, v := range schemes {
				if scheme := strings.ToLower(str(v)); scheme == "http" || scheme == "https" {
					sw.schemes = append(sw.schemes, scheme)
				}
			}
			if sw.styles != nil || sw.form != nil || sw.schemes != nil {
				out[operation{path: path, method: method}.subject()] = sw
			}
		}
	}
	return out
}

// swaggerOperation reads one operation's parameters.
func swaggerOperation(res *resolver, params, consumes []any) swaggerOp {
	merged := map[[2]string]map[string]any{}
	for _, raw := range params {
		if p, err := res.object(raw); err == nil {
			merged[[2]string{str(p["name"]), str(p["in"])}] = p
		}
	}
	var sw swaggerOp
	var form *swaggerForm
	file := false
	for key, p := range merged {
		name, in := key[0], key[1]
		if in == "formData" {
			if form == nil {
				form = &swaggerForm{}
			}
			form.required = form.required || p["required"] == true
			file = file || p["type"] == "file"
		}
		st, ok := collectionStyle(in, str(p["collectionFormat"]))
		switch {
		case !ok || p["type"] != "array":
		case in == "formData":
			if form.fields == nil {
				form.fields = map[string]style{}
			}
			form.fields[name] = st
		default:
			if sw.styles == nil {
				sw.styles = map[[2]string]style{}
			}
			sw.styles[key] = st
		}
	}
	if form != nil {
		form.types = formTypes(consumes, file)
		sw.form = form
	}
	return sw
}

// collectionStyle is the style a collectionFormat stands for in a location:
// csv (the default) is form without explode in a query or a form and
// simple in a path or a header; multi, a repeated query parameter or form
// field, is form with explode (elsewhere, where Swagger does not allow it,
// it is taken as csv); ssv, tsv and pipes are delimited by a space, a tab
// or a pipe.
func collectionStyle(in, format string) (style, bool) {
	switch format {
	case "ssv":
		return style{name: "spaceDelimited"}, true
	case "tsv":
		return style{name: "tabDelimited"}, true
	case "pipes":
		return style{name: "pipeDelimited"}, true
	}
	switch in {
	case "query", "formData":
		return style{name: "form", explode: format == "multi"}, true
	case "path", "header":
		return style{name: "simple"}, true
	}
	return style{}, false
}

// formTypes are a formData body's media types: the form types consumes
// lists, multipart first when a field is a file; when it lists none,
// multipart for a file and urlencoded otherwise.
func formTypes(consumes []any, file bool) []string {
	var types []string
	for _, c := range consumes {
		if ct := strings.TrimSpace(str(c)); mediaBase(ct) == formURLEncoded || mediaBase(ct) == multipartForm {
			types = append(types, ct)
		}
	}
	switch {
	case len(types) == 0 && file:
		return []string{multipartForm}
	case len(types) == 0:
		return []string{formURLEncoded}
	case file:
		return multipartFirst(types)
	}
	return types
}
