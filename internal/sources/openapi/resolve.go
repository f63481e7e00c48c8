package openapi

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// refError says a $ref could not be followed; it skips the operation that
// uses it.
type refError struct {
	ref    string
	reason string
}

func (e *refError) Error() string {
	return fmt.Sprintf("$ref %q %s", e.ref, e.reason)
}

// resolver follows local $refs ("#/components/schemas/Pet", JSON Pointer
// with ~0 and ~1 escapes) in a decoded document. It remembers every target
// it found and, per reference, whether the reference lies on a cycle: a
// reference that does not can be expanded once and shared (see expander).
type resolver struct {
	root    any
	targets map[string]target
	cycles  cycleFinder
}

// target is a resolved $ref: the value it points at, or why it does not.
type target struct {
	value any
	err   error
}

// newResolver returns a resolver over a decoded document.
func newResolver(root any) *resolver {
	r := &resolver{root: root, targets: map[string]target{}}
	r.cycles = cycleFinder{r: r, index: map[string]int{}, low: map[string]int{}, onStack: map[string]bool{}, cyclic: map[string]bool{}, edges: map[string][]string{}}
	return r
}

// resolve returns the value a $ref points at.
func (r *resolver) resolve(ref string) (any, error) {
	if t, ok := r.targets[ref]; ok {
		return t.value, t.err
	}
	v, err := r.lookup(ref)
	r.targets[ref] = target{value: v, err: err}
	return v, err
}

// lookup walks a JSON Pointer fragment from the document's root.
func (r *resolver) lookup(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, &refError{ref, "points outside the document, which is not supported"}
	}
	pointer := ref[1:]
	if strings.Contains(pointer, "%") {
		unescaped, err := url.PathUnescape(pointer)
		if err != nil {
			return nil, &refError{ref, "is not a valid JSON Pointer"}
		}
		pointer = unescaped
	}
	if pointer == "" {
		return r.root, nil
	}
	if pointer[0] != '/' {
		return nil, &refError{ref, "is not a valid JSON Pointer"}
	}
	node := r.root
	for _, seg := range strings.Split(pointer[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		next, ok := child(node, seg)
		if !ok {
			return nil, &refError{ref, "does not resolve"}
		}
		node = next
	}
	return node, nil
}

// child returns an object's member or an array's element.
func child(node any, seg string) (any, bool) {
	switch n := node.(type) {
	case map[string]any:
		v, ok := n[seg]
		return v, ok
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(n) {
			return nil, false
		}
		return n[i], true
	}
	return nil, false
}

// object follows a chain of $refs (a parameter, request body or response
// that is itself a reference) to an object.
func (r *resolver) object(v any) (map[string]any, error) {
	for hops := 0; ; hops++ {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("expected an object, found %s", kind(v))
		}
		ref, isRef := m["$ref"].(string)
		if !isRef {
			return m, nil
		}
		if hops == 32 {
			return nil, &refError{ref, "is part of a chain of references that never ends"}
		}
		next, err := r.resolve(ref)
		if err != nil {
			return nil, err
		}
		v = next
	}
}

// kind names a generic value's JSON type for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "text"
	case bool:
		return "true or false"
	}
	return "a number"
}

// cycleFinder runs Tarjan's strongly connected components algorithm over
// the graph of $refs, lazily from the references a build meets. A
// reference is cyclic when it can reach itself again.
type cycleFinder struct {
	r       *resolver
	counter int
	index   map[string]int
	low     map[string]int
	onStack map[string]bool
	stack   []string
	cyclic  map[string]bool
	edges   map[string][]string
}

// isCyclic reports whether ref lies on a cycle of references.
func (c *cycleFinder) isCyclic(ref string) bool {
	if _, seen := c.index[ref]; !seen {
		c.connect(ref)
	}
	return c.cyclic[ref]
}

// connect is Tarjan's strongconnect for one reference.
func (c *cycleFinder) connect(v string) {
	c.index[v], c.low[v] = c.counter, c.counter
	c.counter++
	c.stack = append(c.stack, v)
	c.onStack[v] = true
	selfLoop := false
	for _, w := range c.refsOf(v) {
		if w == v {
			selfLoop = true
		}
		if _, seen := c.index[w]; !seen {
			c.connect(w)
			c.low[v] = min(c.low[v], c.low[w])
		} else if c.onStack[w] {
			c.low[v] = min(c.low[v], c.index[w])
		}
	}
	if c.low[v] != c.index[v] {
		return
	}
	var component []string
	for {
		w := c.stack[len(c.stack)-1]
		c.stack = c.stack[:len(c.stack)-1]
		c.onStack[w] = false
		component = append(component, w)
		if w == v {
			break
		}
	}
	if len(component) > 1 || selfLoop {
		for _, w := range component {
			c.cyclic[w] = true
		}
	}
}

// refsOf lists the $refs found anywhere inside a reference's target (not
// following them), sorted. Unresolvable references have none.
func (c *cycleFinder) refsOf(ref string) []string {
	if e, ok := c.edges[ref]; ok {
		return e
	}
	var out []string
	if v, err := c.r.resolve(ref); err == nil {
		out = collectRefs(v, out)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	c.edges[ref] = out
	return out
}

// collectRefs appends every "$ref" string value inside v.
func collectRefs(v any, out []string) []string {
	switch n := v.(type) {
	case map[string]any:
		for k, val := range n {
			if s, ok := val.(string); ok && k == "$ref" {
				out = append(out, s)
				continue
			}
			out = collectRefs(val, out)
		}
	case []any:
		for _, val := range n {
			out = collectRefs(val, out)
		}
	}
	return out
}
