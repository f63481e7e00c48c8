// Package credentials keeps the secrets toolgate sends to upstreams: sealed
// with the key ring of internal/secrets, bound to one source, held by a
// user (account scope), a workspace or the organization, and resolved in
// that order when a call is made.
package credentials

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/validation"
)

// Scope says whose a credential is.
type Scope string

// Scopes, in the order a call tries them.
const (
	ScopeAccount      Scope = "account"
	ScopeWorkspace    Scope = "workspace"
	ScopeOrganization Scope = "organization"
)

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool {
	return s == ScopeAccount || s == ScopeWorkspace || s == ScopeOrganization
}

// Label is the scope's name for people.
func (s Scope) Label() string {
	switch s {
	case ScopeAccount:
		return "Yours"
	case ScopeWorkspace:
		return "Workspace"
	case ScopeOrganization:
		return "Organization"
	}
	return string(s)
}

// Type is how a credential authenticates.
type Type string

// Auth types.
const (
	TypeNone    Type = "none"
	TypeBearer  Type = "bearer"
	TypeAPIKey  Type = "apiKey"
	TypeBasic   Type = "basic"
	TypeHeaders Type = "headers"
)

// Types lists every auth type, in the order forms offer them.
var Types = []Type{TypeBearer, TypeAPIKey, TypeBasic, TypeHeaders, TypeNone}

// Label is the type's name for people.
func (t Type) Label() string {
	switch t {
	case TypeNone:
		return "No authentication"
	case TypeBearer:
		return "Bearer token"
	case TypeAPIKey:
		return "API key"
	case TypeBasic:
		return "Basic (username and password)"
	case TypeHeaders:
		return "Custom headers"
	}
	return string(t)
}

// Auth is a credential's type and its parameters; nothing in it is secret.
type Auth struct {
	Type Type `json:"type"`
	// Header carries a bearer token (default Authorization).
	Header string `json:"header,omitempty"`
	// Scheme prefixes a bearer token (default Bearer on Authorization).
	Scheme string `json:"scheme,omitempty"`
	// In is header or query for an API key; Name is the header or parameter.
	In   string `json:"in,omitempty"`
	Name string `json:"name,omitempty"`
	// Username of basic auth.
	Username string `json:"username,omitempty"`
	// Headers names the custom headers (their values are the secret). For
	// a stdio server they are environment variables.
	Headers []string `json:"headers,omitempty"`
}

// Secret is a credential's secret part: it goes in on create and replace
// and never comes back out.
type Secret struct {
	// Value of a bearer token or an API key.
	Value string `json:"value,omitempty"`
	// Password of basic auth.
	Password string `json:"password,omitempty"`
	// Headers of custom-headers auth, name to value.
	Headers map[string]string `json:"headers,omitempty"`
}

// MaxSecretBytes bounds one secret value.
const MaxSecretBytes = 16 << 10

// MaxHeaders bounds the pairs of one custom-headers credential.
const MaxHeaders = 32

var (
	headerName = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	paramName  = regexp.MustCompile(`^[A-Za-z0-9_.\-\[\]]+$`)
)

// reservedHeader reports whether a header belongs to the protocol, so a
// credential may not set it.
func reservedHeader(name string) bool {
	switch strings.ToLower(name) {
	case "host", "content-type", "content-length", "transfer-encoding", "connection", "accept", "accept-encoding",
		"te", "trailer", "upgrade", "cookie2", "last-event-id":
		return true
	}
	return strings.HasPrefix(strings.ToLower(name), "mcp-")
}

// normalize trims the parameters and fills the defaults of a type.
func (a *Auth) normalize() {
	a.Type = Type(strings.TrimSpace(string(a.Type)))
	if strings.EqualFold(string(a.Type), "apikey") || a.Type == "api_key" {
		a.Type = TypeAPIKey
	}
	a.Header = strings.TrimSpace(a.Header)
	a.Scheme = strings.TrimSpace(a.Scheme)
	a.In = strings.ToLower(strings.TrimSpace(a.In))
	a.Name = strings.TrimSpace(a.Name)
	a.Username = strings.TrimSpace(a.Username)
	switch a.Type {
	case TypeBearer:
		if a.Header == "" {
			a.Header = "Authorization"
		}
		if a.Scheme == "" && strings.EqualFold(a.Header, "Authorization") {
			a.Scheme = "Bearer"
		}
		a.In, a.Name, a.Username, a.Headers = "", "", "", nil
	case TypeAPIKey:
		if a.In == "" {
			a.In = "header"
		}
		a.Header, a.Scheme, a.Username, a.Headers = "", "", "", nil
	case TypeBasic:
		a.Header, a.Scheme, a.In, a.Name, a.Headers = "", "", "", "", nil
	case TypeNone:
		*a = Auth{Type: TypeNone}
	case TypeHeaders:
		a.Header, a.Scheme, a.In, a.Name, a.Username = "", "", "", "", ""
	}
}

// check validates the parameters for a source of the given kind: stdio
// servers take environment variables only.
func (a *Auth) check(e validation.Errors, stdio bool) {
	switch a.Type {
	case TypeBearer:
		if !headerName.MatchString(a.Header) {
			e.Add("auth.header", "Use a header name of letters, digits and - (e.g. Authorization).")
		} else if reservedHeader(a.Header) {
			e.Add("auth.header", a.Header+" belongs to the protocol; choose the header the upstream reads the token from.")
		}
		if strings.ContainsAny(a.Scheme, " \r\n\t") {
			e.Add("auth.scheme", "Use one word, e.g. Bearer or Token, or leave it empty.")
		}
	case TypeAPIKey:
		switch a.In {
		case "header":
			if !headerName.MatchString(a.Name) {
				e.Add("auth.name", "Enter the header that carries the key, e.g. X-API-Key.")
			} else if reservedHeader(a.Name) {
				e.Add("auth.name", a.Name+" belongs to the protocol; choose the header the upstream reads the key from.")
			}
		case "query":
			if !paramName.MatchString(a.Name) {
				e.Add("auth.name", "Enter the query parameter that carries the key, e.g. api_key.")
			}
		default:
			e.Add("auth.in", "Choose header or query.")
		}
	case TypeBasic:
		if a.Username == "" {
			e.Add("auth.username", "Enter the username.")
		} else if strings.Contains(a.Username, ":") || len(a.Username) > 256 {
			e.Add("auth.username", "A username has no colon and at most 256 characters.")
		}
	case TypeHeaders, TypeNone:
	case "":
		e.Add("auth.type", "Choose how the upstream authenticates: bearer, apiKey, basic, headers or none.")
		return
	default:
		e.Add("auth.type", fmt.Sprintf("Unknown type %q: choose bearer, apiKey, basic, headers or none.", a.Type))
		return
	}
	if stdio && a.Type != TypeHeaders && a.Type != TypeNone {
		e.Add("auth.type", "A stdio server receives secrets as environment variables: choose custom headers, whose names become variable names.")
	}
}

// checkSecret validates the secret of an auth type and fills the header
// names of custom headers. A nil secret is refused unless the type needs
// none.
func checkSecret(a *Auth, sec *Secret, e validation.Errors, stdio bool) {
	if a.Type == TypeNone {
		return
	}
	if sec == nil {
		e.Add("secret", "Enter the secret: it is encrypted and never shown again.")
		return
	}
	oneLine := func(field, v, what string) {
		switch {
		case v == "":
			e.Add(field, "Enter the "+what+".")
		case len(v) > MaxSecretBytes:
			e.Add(field, fmt.Sprintf("The %s is longer than %d KiB.", what, MaxSecretBytes>>10))
		case strings.ContainsAny(v, "\r\n\x00") || !utf8.ValidString(v):
			e.Add(field, "The "+what+" must be one line of text.")
		}
	}
	switch a.Type {
	case TypeBearer:
		oneLine("secret.value", strings.TrimSpace(sec.Value), "token")
		sec.Value = strings.TrimSpace(sec.Value)
	case TypeAPIKey:
		oneLine("secret.value", strings.TrimSpace(sec.Value), "key")
		sec.Value = strings.TrimSpace(sec.Value)
	case TypeBasic:
		oneLine("secret.password", sec.Password, "password")
	case TypeHeaders:
		if len(sec.Headers) == 0 {
			e.Add("secret.headers", "Add at least one name and value.")
			return
		}
		if len(sec.Headers) > MaxHeaders {
			e.Add("secret.headers", fmt.Sprintf("Use at most %d pairs.", MaxHeaders))
		}
		names := make([]string, 0, len(sec.Headers))
		for k, v := range sec.Headers {
			name := strings.TrimSpace(k)
			if stdio && !envName.MatchString(name) {
				e.Add("secret.headers", fmt.Sprintf("%q is not a valid environment variable name.", name))
			} else if !stdio && !headerName.MatchString(name) {
				e.Add("secret.headers", fmt.Sprintf("%q is not a valid header name.", name))
			} else if !stdio && reservedHeader(name) {
				e.Add("secret.headers", name+" belongs to the protocol and cannot be set by a credential.")
			}
			oneLine("secret.headers", v, "value of "+name)
			names = append(names, name)
		}
		sort.Strings(names)
		a.Headers = names
	}
	if sec.Value != "" && a.Type != TypeBearer && a.Type != TypeAPIKey {
		e.Add("secret.value", "This type takes no value; see the fields of its secret.")
	}
}

// hintOf is the last 4 characters of a long enough secret, for people to
// tell credentials apart; a short secret shows nothing.
func hintOf(a Auth, sec *Secret) string {
	var v string
	switch {
	case sec == nil:
		return ""
	case a.Type == TypeBearer || a.Type == TypeAPIKey:
		v = sec.Value
	case a.Type == TypeBasic:
		v = sec.Password
	case a.Type == TypeHeaders && len(a.Headers) > 0:
		v = sec.Headers[a.Headers[0]]
		if v == "" {
			for k, val := range sec.Headers {
				if strings.TrimSpace(k) == a.Headers[0] {
					v = val
				}
			}
		}
	}
	if utf8.RuneCountInString(v) < 12 {
		return ""
	}
	r := []rune(v)
	return "…" + string(r[len(r)-4:])
}

// build turns a credential into what its requests carry. For a stdio
// server, custom headers become environment variables.
func build(a Auth, sec Secret, stdio bool) *sources.Auth {
	out := &sources.Auth{}
	switch a.Type {
	case TypeBearer:
		v := sec.Value
		if a.Scheme != "" {
			v = a.Scheme + " " + v
		}
		out.SetHeader(http.CanonicalHeaderKey(a.Header), v)
		out.AddSecret(sec.Value)
	case TypeAPIKey:
		if a.In == "query" {
			out.SetQuery(a.Name, sec.Value)
		} else {
			out.SetHeader(http.CanonicalHeaderKey(a.Name), sec.Value)
		}
	case TypeBasic:
		userPass := a.Username + ":" + sec.Password
		out.SetHeader("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(userPass)))
		out.AddSecret(sec.Password, userPass)
	case TypeHeaders:
		for k, v := range sec.Headers {
			k = strings.TrimSpace(k)
			if stdio {
				out.SetEnv(k, v)
			} else {
				out.SetHeader(k, v)
			}
		}
	}
	return out
}

// ProfileAuth turns a source's inferred auth profile into the form's
// starting point.
func ProfileAuth(p *sources.AuthProfile) Auth {
	if p == nil {
		return Auth{Type: TypeBearer}
	}
	switch p.Type {
	case "apiKey":
		if p.In == "cookie" {
			return Auth{Type: TypeHeaders, Headers: []string{"Cookie"}}
		}
		return Auth{Type: TypeAPIKey, In: p.In, Name: p.Name}
	case "basic":
		return Auth{Type: TypeBasic}
	case "none":
		return Auth{Type: TypeNone}
	case "bearer":
		return Auth{Type: TypeBearer, Header: "Authorization", Scheme: p.Scheme}
	}
	return Auth{Type: TypeBearer, Header: "Authorization", Scheme: "Bearer"}
}

// Describe says in a sentence what requests will carry, e.g. "X-API-Key
// header" or "api_key query parameter".
func (a Auth) Describe() string {
	switch a.Type {
	case TypeBearer:
		if a.Scheme != "" {
			return a.Header + ": " + a.Scheme + " …"
		}
		return a.Header + " header"
	case TypeAPIKey:
		if a.In == "query" {
			return a.Name + " query parameter"
		}
		return a.Name + " header"
	case TypeBasic:
		return "Basic auth as " + a.Username
	case TypeHeaders:
		return strings.Join(a.Headers, ", ")
	}
	return "Nothing is added"
}
