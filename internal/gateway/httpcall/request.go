// Package httpcall turns an OpenAPI tool call into an HTTP request and an
// upstream's answer into what the agent sees.
//
// [BuildRequest] serializes the tool's arguments by the operation's
// [openapi.Ref]: path, query, header and cookie parameters by their style
// and explode, the body by the first media type the argument can be sent
// as (files as their bytes), against the source's base URL or the
// operation's own server, with the credential applied last so
// that no argument can replace it. [ReadResult] reads a response up to a
// cap and [Result.Text] renders it for the agent.
package httpcall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/openapi"
)

// BodyProperty is the argument that carries the request body.
const BodyProperty = "body"

// ArgError says why a call's arguments cannot make a request: each
// problem names the argument. The gateway reports it to the agent as a
// tool error; any other error from [BuildRequest] is the source's fault.
type ArgError struct {
	Problems []string
}

func (e *ArgError) Error() string {
	return "invalid arguments: " + strings.Join(e.Problems, "; ")
}

// Option adds what an [openapi.Ref] does not record.
type Option func(*options)

type options struct {
	binary map[string]bool
}

// WithBinaryFields names multipart body fields to send as file parts of
// the text given, for references stored before discovery recorded files
// ([openapi.FieldRef.Binary], whose values are base64 and sent decoded):
// their input schemas ask for a binary string (see [BinaryFields]) and
// agents give its text. A field the reference marks as a file is sent as
// the reference says.
func WithBinaryFields(names ...string) Option {
	return func(o *options) {
		if o.binary == nil {
			o.binary = make(map[string]bool, len(names))
		}
		for _, n := range names {
			o.binary[n] = true
		}
	}
}

// BuildRequest makes the HTTP request for a call of the operation ref
// describes, with args as the tool's arguments (decoded JSON), against
// baseURL (the source's, which may have a path prefix), or the operation's
// own server when the Ref names one ([openapi.Ref.BaseURL]). auth, which may be
// nil, is applied last: a header or query parameter it sets replaces any
// argument of the same name (compared without case), and its cookies keep
// their names. Arguments the Ref does not name are not sent; the input
// schema, checked before, refuses them.
//
// A missing required argument, a value a style cannot carry or a value that
// would break out of its place (a dot segment, a line break in a header)
// is an [*ArgError].
func BuildRequest(ctx context.Context, ref openapi.Ref, baseURL string, args map[string]any, auth *sources.Auth, opts ...Option) (*http.Request, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var base *url.URL
	var err error
	if ref.BaseURL != "" {
		base, err = parseServer(ref)
	} else {
		base, err = parseBase(baseURL)
	}
	if err != nil {
		return nil, err
	}
	method := strings.ToUpper(ref.Method)
	if method == "" || strings.ContainsAny(method, " \t\r\n") {
		return nil, fmt.Errorf("operation %s has no usable method (%q)", ref.OperationID, ref.Method)
	}

	var b builder
	path := b.params(ref, args)
	var body *encodedBody
	if ref.Body != nil {
		body = b.body(ref.Body, args[BodyProperty], o.binary)
	}
	if len(b.problems) > 0 {
		return nil, &ArgError{Problems: b.problems}
	}
	expanded, err := expandPath(ref.Path, path)
	if err != nil {
		return nil, err
	}

	u := *base
	u.RawPath = strings.TrimRight(base.EscapedPath(), "/") + expanded
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return nil, fmt.Errorf("join base URL and path %s: %w", ref.Path, err)
	}
	u.RawQuery = ""
	u.Fragment, u.RawFragment = "", ""

	var reader io.Reader // a nil *bytes.Reader would not be a nil io.Reader
	if body != nil {
		reader = bytes.NewReader(body.data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reader)
	if err != nil {
		return nil, fmt.Errorf("make request for %s %s: %w", method, ref.Path, err)
	}
	// NewRequest parses the URL again; keep the exact encoding built here.
	req.URL.Path, req.URL.RawPath = u.Path, u.RawPath
	if body != nil {
		req.Header.Set("Content-Type", body.contentType)
	}
	for _, h := range b.headers {
		req.Header.Set(h.key, h.value)
	}

	// The credential wins: arguments it would collide with go first, then
	// Apply sets its headers and its query (on an empty query, so that the
	// arguments' exact encoding survives Apply's re-encoding).
	query := append(splitQuery(base.RawQuery), b.query...)
	cookies := b.cookies
	if auth != nil {
		for name := range auth.Headers {
			for k := range req.Header {
				if strings.EqualFold(k, name) {
					delete(req.Header, k)
				}
			}
		}
		query = without(query, auth.Query)
		cookies = without(cookies, credentialCookies(auth.Headers))
	}
	auth.Apply(req)
	req.URL.RawQuery = joinQuery(query, req.URL.RawQuery)
	if len(cookies) > 0 {
		list := strings.Join(cookies, "; ")
		if existing := req.Header.Get("Cookie"); existing != "" {
			list = existing + "; " + list
		}
		req.Header.Set("Cookie", list)
	}
	return req, nil
}

// parseBase checks the source's base URL.
func parseBase(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("the source has no base URL: set one for calls to work")
	}
	return absoluteURL(raw, "the source's base URL")
}

// parseServer checks an operation's own server.
func parseServer(ref openapi.Ref) (*url.URL, error) {
	return absoluteURL(ref.BaseURL, fmt.Sprintf("the server of operation %s %s", ref.Method, ref.Path))
}

// absoluteURL parses an absolute http or https URL; what names it in errors.
func absoluteURL(raw, what string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("%s %q is not a URL: %w", what, raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q is not an absolute http or https URL", what, raw)
	}
	return u, nil
}

// builder collects a call's serialized parameters and its problems.
type builder struct {
	problems []string
	query    []string // escaped name=value pairs
	headers  []field
	cookies  []string
}

func (b *builder) problem(format string, a ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, a...))
}

// param names a parameter in a problem: `query parameter "limit"`, with
// the argument when it differs from the name.
func param(p openapi.ParamRef) string {
	s := fmt.Sprintf("%s parameter %q", p.In, p.Name)
	if p.Property != "" && p.Property != p.Name {
		s += fmt.Sprintf(" (argument %q)", p.Property)
	}
	return s
}

// argument is the value of p's argument, normalized, and whether one was
// given: null and an empty array or object count as absent (RFC 6570's
// undefined), except that a required parameter given an empty array or
// object is sent empty. The value of a parameter described by a media type
// is its text in that type, whatever its shape ("[]" is a JSON value).
func (b *builder) argument(p openapi.ParamRef, args map[string]any) (any, value, bool) {
	prop := p.Property
	if prop == "" {
		prop = p.Name
	}
	raw, err := normalize(args[prop])
	if err != nil {
		b.problem("%s: %v", param(p), err)
		return nil, value{}, false
	}
	if raw == nil {
		if p.Required {
			b.problem("%s is required", param(p))
		}
		return nil, value{}, false
	}
	if p.ContentType != "" {
		text, err := mediaText(p.ContentType, raw)
		if err != nil {
			b.problem("%s: %v", param(p), err)
			return nil, value{}, false
		}
		return text, value{shape: primitive, text: text}, true
	}
	v, err := flatten(raw)
	if err != nil {
		b.problem("%s: %v", param(p), err)
		return nil, value{}, false
	}
	if v.empty() {
		if !p.Required {
			return nil, value{}, false
		}
		v = value{shape: primitive}
	}
	return raw, v, true
}

// params serializes the parameters; path values come back by name.
func (b *builder) params(ref openapi.Ref, args map[string]any) map[string]string {
	path := map[string]string{}
	for _, p := range ref.Params {
		if p.In == "path" {
			p.Required = true
		}
		if p.ContentType != "" {
			// The media type's text is one value, sent as the location's
			// default style sends a string.
			p.Style = ""
		}
		raw, v, ok := b.argument(p, args)
		if !ok {
			continue
		}
		switch p.In {
		case "path":
			s, err := pathValue(p.Name, p.Style, p.Explode, v)
			if err != nil {
				b.problem("%s: %v", param(p), err)
				continue
			}
			path[p.Name] = s
		case "query":
			pairs, err := queryPairs(p.Name, p.Style, p.Explode, p.AllowReserved, raw, v)
			if err != nil {
				b.problem("%s: %v", param(p), err)
				continue
			}
			b.query = append(b.query, pairs...)
		case "header":
			if reservedHeader(p.Name) {
				b.problem("%s: the %s header belongs to the protocol and cannot be set by an argument", param(p), p.Name)
				continue
			}
			s, err := headerValue(p.Style, p.Explode, v)
			if err != nil {
				b.problem("%s: %v", param(p), err)
				continue
			}
			b.headers = append(b.headers, field{p.Name, s})
		case "cookie":
			if !token(p.Name) {
				b.problem("%s: the name is not one a cookie can have", param(p))
				continue
			}
			pairs, err := cookiePairs(p.Name, p.Style, p.Explode, v)
			if err != nil {
				b.problem("%s: %v", param(p), err)
				continue
			}
			b.cookies = append(b.cookies, pairs...)
		default:
			b.problem("%s: the location %q is not one toolgate can send", param(p), p.In)
		}
	}
	return path
}

// reservedHeader reports headers that belong to the protocol (framing,
// connection, host) or have their own parameters (cookies).
func reservedHeader(name string) bool {
	switch strings.ToLower(name) {
	case "host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive",
		"proxy-connection", "proxy-authorization", "te", "trailer", "upgrade", "cookie":
		return true
	}
	return !token(name)
}

// token reports whether s is an HTTP token (a header or cookie name).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(unreserved(c) || strings.IndexByte("!#$%&'*+^`|", c) >= 0) {
			return false
		}
	}
	return true
}

// expandPath fills the path template's {name} expressions with the
// serialized values. A segment holding an expression may not come out
// empty, "." or "..": a value never moves the request to another path.
func expandPath(template string, values map[string]string) (string, error) {
	if !strings.HasPrefix(template, "/") {
		template = "/" + template
	}
	var out strings.Builder
	segments := strings.Split(template[1:], "/")
	var problems []string
	for _, seg := range segments {
		out.WriteByte('/')
		if !strings.Contains(seg, "{") {
			out.WriteString(escapeLiteral(seg))
			continue
		}
		var s strings.Builder
		rest := seg
		var names []string
		for {
			open := strings.IndexByte(rest, '{')
			if open < 0 {
				s.WriteString(escapeLiteral(rest))
				break
			}
			end := strings.IndexByte(rest[open:], '}')
			if end < 0 {
				return "", fmt.Errorf("the path template %s has an unclosed {", template)
			}
			s.WriteString(escapeLiteral(rest[:open]))
			name := rest[open+1 : open+end]
			v, ok := values[name]
			if !ok {
				// A parameter that was declared but missing is already a
				// problem; one never declared is the document's fault.
				return "", fmt.Errorf("the path template %s names {%s}, which no path parameter fills", template, name)
			}
			s.WriteString(v)
			names = append(names, name)
			rest = rest[open+end+1:]
		}
		switch got := s.String(); got {
		case "", ".", "..":
			problems = append(problems, fmt.Sprintf("path parameter %q: the value makes the path segment %q, which would change the path", strings.Join(names, ", "), got))
		default:
			out.WriteString(got)
		}
	}
	if len(problems) > 0 {
		return "", &ArgError{Problems: problems}
	}
	return out.String(), nil
}

// escapeLiteral escapes the characters a path cannot carry in a
// template's literal text; what a path allows, and escapes already
// there, stay.
func escapeLiteral(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || strings.IndexByte("!$&'()*+,;=:@", c) >= 0 || c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// splitQuery splits a raw query into its pairs.
func splitQuery(raw string) []string {
	if raw == "" {
		return nil
	}
	return strings.Split(raw, "&")
}

// joinQuery joins raw pairs and a raw query.
func joinQuery(pairs []string, tail string) string {
	if tail != "" {
		pairs = append(pairs, tail)
	}
	return strings.Join(pairs, "&")
}

// without drops the name=value pairs whose name (unescaped) is one of
// names, without regard to case.
func without(list []string, names map[string]string) []string {
	if len(names) == 0 {
		return list
	}
	out := list[:0:0]
	for _, pair := range list {
		name, _, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		name = strings.TrimSpace(name)
		taken := false
		for k := range names {
			if strings.EqualFold(k, name) {
				taken = true
				break
			}
		}
		if !taken {
			out = append(out, pair)
		}
	}
	return out
}

// credentialCookies are the names of the cookies a credential's Cookie
// header sets.
func credentialCookies(headers map[string]string) map[string]string {
	names := map[string]string{}
	for k, v := range headers {
		if !strings.EqualFold(k, "Cookie") {
			continue
		}
		for part := range strings.SplitSeq(v, ";") {
			name, _, _ := strings.Cut(part, "=")
			if name = strings.TrimSpace(name); name != "" {
				names[name] = ""
			}
		}
	}
	return names
}
