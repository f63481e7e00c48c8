package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decode reads a JSON or YAML document into generic values: objects as
// map[string]any, arrays as []any, numbers as json.Number (so large
// integers survive), plus string, bool and nil. JSON is read with
// encoding/json; anything else is read as YAML.
func decode(doc []byte) (any, error) {
	doc = bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 {
		return nil, errors.New("the document is empty")
	}
	if isHTML(trimmed) {
		return nil, errors.New("the document is an HTML page, not an OpenAPI description")
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		return decodeJSON(doc)
	}
	return decodeYAML(doc)
}

// isHTML reports whether a document looks like an HTML page, as a URL that
// answers with a login or error page instead of the spec gives.
func isHTML(doc []byte) bool {
	if doc[0] != '<' {
		return false
	}
	head := bytes.ToLower(doc[:min(len(doc), 1024)])
	for _, tag := range []string{"<!doctype html", "<html", "<head", "<body"} {
		if bytes.Contains(head, []byte(tag)) {
			return true
		}
	}
	return false
}

// decodeJSON decodes one JSON value and refuses trailing data.
func decodeJSON(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonError(doc, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, _ := lineAt(doc, int(dec.InputOffset()))
		return nil, fmt.Errorf("the document is not valid JSON or YAML: line %d: unexpected data after the top-level value", line)
	}
	return v, nil
}

// jsonError turns a decoding error into a sentence naming the line.
func jsonError(doc []byte, err error) error {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		line, col := lineAt(doc, int(syntax.Offset)-1) // Offset is just past the bad byte
		return fmt.Errorf("the document is not valid JSON or YAML: line %d, column %d: %s", line, col, syntax.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("the document is not valid JSON or YAML: it ends before the JSON is complete")
	}
	return fmt.Errorf("the document is not valid JSON or YAML: %w", err)
}

// lineAt returns the 1-based line and column of a byte offset.
func lineAt(doc []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(doc))
	before := doc[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = offset - bytes.LastIndexByte(before, '\n')
	return line, col
}

// errAliasBomb refuses a YAML document whose aliases expand too far.
var errAliasBomb = errors.New("the document is not valid JSON or YAML: its aliases expand to more nodes than toolgate accepts")

// decodeYAML parses the first YAML document and converts it to generic
// values.
func decodeYAML(doc []byte) (any, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return nil, fmt.Errorf("the document is not valid JSON or YAML: %s", msg)
	}
	if root.Kind == 0 {
		return nil, errors.New("the document is empty")
	}
	c := yamlConverter{aliases: map[*yaml.Node]anchored{}, limit: max(4*len(doc), 4<<20)}
	return c.value(&root)
}

// yamlConverter turns yaml.v3 nodes into generic values. An alias shares
// the value its anchor produced, but counts as the nodes it stands for:
// later steps walk it once per use, so a document whose aliases expand
// past limit nodes (a "billion laughs" document) is refused.
type yamlConverter struct {
	aliases      map[*yaml.Node]anchored
	count, limit int
}

// anchored is an anchor's converted value and its size in nodes.
type anchored struct {
	value any
	nodes int
}

// value converts one node.
func (c *yamlConverter) value(n *yaml.Node) (any, error) {
	if c.count++; c.count > c.limit {
		return nil, errAliasBomb
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.value(item)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.AliasNode:
		return c.alias(n)
	case yaml.ScalarNode:
		return scalar(n), nil
	}
	return nil, fmt.Errorf("the document is not valid JSON or YAML: line %d: unexpected YAML node", n.Line)
}

// alias converts an alias, sharing the value of its anchor.
func (c *yamlConverter) alias(n *yaml.Node) (any, error) {
	if a, ok := c.aliases[n.Alias]; ok {
		c.count += a.nodes
		if c.count > c.limit {
			return nil, errAliasBomb
		}
		return a.value, nil
	}
	start := c.count
	v, err := c.value(n.Alias)
	if err != nil {
		return nil, err
	}
	c.aliases[n.Alias] = anchored{value: v, nodes: c.count - start}
	return v, nil
}

// mapping converts a YAML mapping; keys are taken as text (YAML's `200:`
// is the response code "200") and merge keys (`<<: *base`) fill in the
// keys the mapping does not set itself.
func (c *yamlConverter) mapping(n *yaml.Node) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := c.key(k)
		if err != nil {
			return nil, err
		}
		if out[key], err = c.value(v); err != nil {
			return nil, err
		}
	}
	for _, m := range merges {
		if err := c.merge(out, m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// key returns a mapping key as text.
func (c *yamlConverter) key(k *yaml.Node) (string, error) {
	for k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("the document is not valid JSON or YAML: line %d: a mapping key must be text", k.Line)
	}
	return k.Value, nil
}

// merge copies the keys of a merged mapping (or list of mappings) that out
// does not have yet.
func (c *yamlConverter) merge(out map[string]any, m *yaml.Node) error {
	sources := []*yaml.Node{m}
	if m.Kind == yaml.SequenceNode {
		sources = m.Content
	}
	for _, s := range sources {
		v, err := c.value(s)
		if err != nil {
			return err
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("the document is not valid JSON or YAML: line %d: a merge key (<<) must refer to a mapping", m.Line)
		}
		for k, val := range obj {
			if _, set := out[k]; !set {
				out[k] = val
			}
		}
	}
	return nil
}

// scalar converts a YAML scalar by its resolved tag. Numbers become
// json.Number, keeping their text when it is already valid JSON.
func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int", "!!float":
		return number(n)
	}
	return n.Value
}

// number converts a YAML number; values JSON cannot hold (.inf, .nan) stay
// text.
func number(n *yaml.Node) any {
	if isJSONNumber(n.Value) {
		return json.Number(n.Value)
	}
	var i int64
	if n.ShortTag() == "!!int" && n.Decode(&i) == nil {
		return json.Number(strconv.FormatInt(i, 10))
	}
	var f float64
	if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return n.Value
}

// isJSONNumber reports whether s is a number literal as JSON spells it.
func isJSONNumber(s string) bool {
	if s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	var v any
	return json.Unmarshal([]byte(s), &v) == nil
}
