package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// MaxPathLen is MCP's limit on a tool name.
const MaxPathLen = 64

// SnakeCase turns an identifier in any common spelling into snake_case:
// "listPets" → "list_pets", "repos/get" → "repos_get",
// "GET /pets/{petId}" → "get_pets_pet_id", "HTTPServer" → "http_server".
func SnakeCase(s string) string {
	var b strings.Builder
	runes := []rune(s)
	sep := false
	for i, r := range runes {
		switch {
		case unicode.IsUpper(r):
			prevLower := i > 0 && (unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1]))
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			prevUpper := i > 0 && unicode.IsUpper(runes[i-1])
			if b.Len() > 0 && (prevLower || prevUpper && nextLower) {
				sep = true
			}
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			b.WriteRune(unicode.ToLower(r))
		case r < 128 && (unicode.IsLower(r) || unicode.IsDigit(r)):
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			b.WriteRune(r)
		default:
			sep = true
		}
	}
	return b.String()
}

// validNameRune reports whether MCP allows r in a tool name.
func validNameRune(r rune) bool {
	return r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '_' || r == '-' || r == '.'
}

// sanitize keeps a name within MCP's alphabet: other characters become "_",
// runs of separators collapse, and no segment is empty.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		if !validNameRune(r) {
			r = '_'
		}
		b.WriteRune(r)
	}
	parts := strings.Split(b.String(), ".")
	kept := parts[:0]
	for _, p := range parts {
		for strings.Contains(p, "__") {
			p = strings.ReplaceAll(p, "__", "_")
		}
		if p = strings.Trim(p, "_-"); p != "" {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return "tool"
	}
	return strings.Join(kept, ".")
}

// shorten fits a path into MaxPathLen by cutting the name and adding a short
// hash of the whole, so two long names stay apart and refreshes agree.
func shorten(path string) string {
	if len(path) <= MaxPathLen {
		return path
	}
	sum := sha256.Sum256([]byte(path))
	suffix := "_" + hex.EncodeToString(sum[:])[:6]
	return strings.TrimRight(path[:MaxPathLen-len(suffix)], "._-") + suffix
}

// AssignPaths gives every tool its path "namespace.name" within MCP's rules,
// deterministically: tools are ordered by name and reference, collisions get
// "_2", "_3" in that order, and each tool gets camelCase and compact aliases.
// It returns the tools in path order.
func AssignPaths(namespace string, tools []Tool) []Tool {
	namespace = sanitize(strings.ReplaceAll(namespace, ".", "_"))
	sort.SliceStable(tools, func(i, j int) bool {
		if tools[i].Name != tools[j].Name {
			return tools[i].Name < tools[j].Name
		}
		return string(tools[i].Ref) < string(tools[j].Ref)
	})
	taken := map[string]bool{}
	for i := range tools {
		base := shorten(namespace + "." + sanitize(tools[i].Name))
		path := base
		for n := 2; taken[path]; n++ {
			suffix := fmt.Sprintf("_%d", n)
			path = shorten(base[:min(len(base), MaxPathLen-len(suffix))] + suffix)
		}
		taken[path] = true
		tools[i].Path = path
	}
	for i := range tools {
		tools[i].Aliases = aliasesOf(tools[i].Path, taken)
	}
	sort.SliceStable(tools, func(i, j int) bool { return tools[i].Path < tools[j].Path })
	return tools
}

// aliasesOf returns the camelCase, snake_case and compact spellings of a
// path that no other tool already uses as its path.
func aliasesOf(path string, taken map[string]bool) []string {
	var out []string
	seen := map[string]bool{path: true}
	for _, a := range []string{CamelPath(path), SnakePath(path), CompactPath(path)} {
		if !seen[a] && !taken[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// CamelPath spells each segment of a path in lowerCamelCase:
// "github.repos.list_for_org" → "github.repos.listForOrg".
func CamelPath(path string) string {
	segs := strings.Split(path, ".")
	for i, s := range segs {
		words := strings.FieldsFunc(s, func(r rune) bool { return r == '_' || r == '-' })
		for j := 1; j < len(words); j++ {
			words[j] = strings.ToUpper(words[j][:1]) + words[j][1:]
		}
		segs[i] = strings.Join(words, "")
	}
	return strings.Join(segs, ".")
}

// SnakePath spells each segment of a path in snake_case:
// "library.mutation.addBook" → "library.mutation.add_book".
func SnakePath(path string) string {
	segs := strings.Split(path, ".")
	for i, s := range segs {
		if snake := SnakeCase(s); snake != "" {
			segs[i] = snake
		}
	}
	return strings.Join(segs, ".")
}

// CompactPath is the lookup key that ignores case and separators:
// "github.repos.list_for_org" → "githubreposlistfororg".
func CompactPath(path string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(path) {
		if r != '.' && r != '_' && r != '-' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
