package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

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
