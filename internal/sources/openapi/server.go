package openapi

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/sources"
)

// baseURL is where calls go: the override, else the first server (its
// variables at their defaults, resolved against the document's own URL
// when relative), else Swagger 2.0's schemes, host and basePath. Without
// one, Build warns that calls need a base URL.
func (b *builder) baseURL(doc document, opts Options) string {
	if base := strings.TrimSpace(opts.BaseURL); base != "" {
		return strings.TrimRight(base, "/")
	}
	raw := firstServer(doc.doc["servers"])
	if doc.swagger != nil {
		raw = swaggerServer(doc.swagger, opts.SourceURL)
	}
	if raw == "" {
		b.warn("servers", "the document names no server: set a base URL for calls to work")
		return ""
	}
	base, problem := resolveServer(raw, opts.SourceURL)
	if problem != "" {
		b.warn("servers", problem+": set a base URL for calls to work")
	}
	return base
}

// operationBaseURL is the base URL an operation's own servers give (its
// own, else its path item's), resolved as the document's are; "" when it
// declares none or they come to the document's base URL. When the source
// overrides the base URL, the override takes every call and the
// operation's servers are only counted, for one warning.
func (b *builder) operationBaseURL(o operation) string {
	raw := firstServer(o.servers)
	if raw == "" {
		return ""
	}
	if b.overridden {
		b.ownServers++
		return ""
	}
	base, problem := resolveServer(raw, b.sourceURL)
	if problem != "" {
		b.warn(o.subject(), problem+": its calls go to the source's base URL")
	}
	if base == b.base {
		return ""
	}
	return base
}

// ownScheme is the server list of a Swagger 2.0 operation whose own
// schemes (http, https) leave out the scheme of the document's base URL:
// that base URL with https when the operation allows it, else http. It is
// nil when the operation names none, allows the document's scheme, or
// there is no absolute base URL to change.
func (b *builder) ownScheme(schemes []string) []any {
	if len(schemes) == 0 || b.docScheme == "" || slices.Contains(schemes, b.docScheme) {
		return nil
	}
	u, err := url.Parse(b.base)
	if b.base == "" || err != nil || !u.IsAbs() {
		return nil
	}
	u.Scheme = "http"
	if slices.Contains(schemes, "https") {
		u.Scheme = "https"
	}
	return []any{map[string]any{"url": u.String()}}
}

// swaggerScheme is the scheme of a Swagger 2.0 document's own base URL
// (as swaggerServer builds it, resolved against the document's URL); ""
// when it has none.
func swaggerScheme(doc map[string]any, sourceURL string) string {
	base, problem := resolveServer(swaggerServer(doc, sourceURL), sourceURL)
	u, err := url.Parse(base)
	if problem != "" || err != nil || !u.IsAbs() {
		return ""
	}
	return u.Scheme
}

// resolveServer makes a server URL absolute against the document's own URL
// and trims its trailing slashes; when it cannot, it says why.
func resolveServer(raw, sourceURL string) (base, problem string) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Sprintf("the server URL %q is not a URL (%v)", raw, err)
	}
	if !u.IsAbs() {
		src, err := url.Parse(sourceURL)
		if sourceURL == "" || err != nil || !src.IsAbs() {
			return "", fmt.Sprintf("the server URL %q is relative and the document has no URL to resolve it against", raw)
		}
		u = src.ResolveReference(u)
	}
	return strings.TrimRight(u.String(), "/"), ""
}

// firstServer is the URL of the first of a list of server objects, with
// its variables at their defaults; "" for an empty list.
func firstServer(list any) string {
	servers, _ := list.([]any)
	if len(servers) == 0 {
		return ""
	}
	server, _ := servers[0].(map[string]any)
	raw := strings.TrimSpace(str(server["url"]))
	vars, _ := server["variables"].(map[string]any)
	for name, v := range vars {
		def, _ := v.(map[string]any)
		raw = strings.ReplaceAll(raw, "{"+name+"}", versionText(def["default"]))
	}
	return raw
}

// swaggerServer builds Swagger 2.0's base URL; without a host it is the
// base path alone, to resolve against the document's URL, and without
// schemes the scheme is the document's own (https for an inline one).
func swaggerServer(doc map[string]any, sourceURL string) string {
	host := strings.TrimSpace(str(doc["host"]))
	basePath := strings.TrimSpace(str(doc["basePath"]))
	if host == "" {
		if basePath == "" {
			basePath = "/"
		}
		return basePath
	}
	scheme := "https"
	if src, err := url.Parse(sourceURL); err == nil && (src.Scheme == "http" || src.Scheme == "https") {
		scheme = src.Scheme
	}
	if schemes, _ := doc["schemes"].([]any); len(schemes) > 0 && str(schemes[0]) != "" {
		scheme = str(schemes[0])
	}
	if basePath != "" && !strings.HasPrefix(basePath, "/") {
		basePath = "/" + basePath
	}
	return scheme + "://" + host + basePath
}

// authProfile infers how the API authenticates: the first usable scheme
// the global security requirement names, else the most convenient of the
// declared schemes (bearer, API key, basic, OAuth 2), by name on a tie.
func (b *builder) authProfile() *sources.AuthProfile {
	components, _ := b.root["components"].(map[string]any)
	schemes, _ := components["securitySchemes"].(map[string]any)
	if len(schemes) == 0 {
		return nil
	}
	requirements, _ := b.root["security"].([]any)
	for _, req := range requirements {
		names := sortedKeys(req)
		for _, name := range names {
			if p := b.scheme(schemes[name]); p != nil {
				return p
			}
		}
	}
	var best *sources.AuthProfile
	for _, name := range sortedKeys(schemes) {
		p := b.scheme(schemes[name])
		if p != nil && (best == nil || authRank(p) < authRank(best)) {
			best = p
		}
	}
	return best
}

// sortedKeys returns an object's keys, sorted; nil for anything else.
func sortedKeys(v any) []string {
	m, _ := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// authRank orders profiles by how readily toolgate can use them.
func authRank(p *sources.AuthProfile) int {
	return cmp.Or(slices.Index([]string{"bearer", "apiKey", "basic", "oauth2"}, p.Type)+1, 5)
}

// scheme turns one security scheme into a profile, nil when it is not one
// toolgate knows (or not an object).
func (b *builder) scheme(raw any) *sources.AuthProfile {
	s, err := b.res.object(raw)
	if err != nil {
		return nil
	}
	switch str(s["type"]) {
	case "http", "basic":
		switch strings.ToLower(str(s["scheme"])) {
		case "bearer":
			return &sources.AuthProfile{Type: "bearer", Scheme: "Bearer"}
		case "basic", "":
			if str(s["type"]) == "basic" || strings.EqualFold(str(s["scheme"]), "basic") {
				return &sources.AuthProfile{Type: "basic"}
			}
		}
	case "apiKey":
		in := str(s["in"])
		if (in == "header" || in == "query" || in == "cookie") && str(s["name"]) != "" {
			return &sources.AuthProfile{Type: "apiKey", In: in, Name: str(s["name"])}
		}
	case "oauth2", "openIdConnect":
		return &sources.AuthProfile{Type: "oauth2", Note: "OAuth 2 is noted for later; use a bearer token for now"}
	}
	return nil
}
