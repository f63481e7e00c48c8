package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/jsonscan"
	"github.com/toolgate/toolgate/internal/sources"
)

// Redacted replaces the value of a secret-looking argument in the audit.
const Redacted = "[redacted]"

// RedactArguments returns a call's arguments as the audit keeps them: a
// JSON object in which the value of every secret-looking key (password,
// secret, token, api_key, authorization, cookie, private_key, credential,
// access_key and the like, in any case and spelling, at any depth, in
// objects and arrays) is "[redacted]", at most [audit.MaxArgumentBytes]
// long (long strings are cut first; what still does not fit is replaced
// by a note of its size). Empty or null arguments are {}; arguments that
// are not an object are kept under the key "[arguments]", and bytes that
// are not JSON are not kept at all.
func RedactArguments(args json.RawMessage) json.RawMessage {
	v, err := decodeArguments(args)
	if err != nil {
		return notJSON(args)
	}
	return redactArguments(args, v, nil)
}

// redactArguments is RedactArguments over arguments already decoded into
// v (raw is their JSON), also replacing every value auth carries wherever
// it appears.
func redactArguments(raw json.RawMessage, v any, auth *sources.Auth) json.RawMessage {
	obj, isObject := v.(map[string]any)
	if !isObject {
		obj = map[string]any{"[arguments]": v}
	}
	var out []byte
	if isObject && !hasSecretKeys(obj) && len(raw) <= audit.MaxArgumentBytes && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		// The common case: nothing to replace; keep the caller's JSON
		// (compacted, which also copies it away from the caller's buffer).
		var b bytes.Buffer
		b.Grow(len(raw))
		if json.Compact(&b, raw) == nil {
			out = b.Bytes()
		}
	}
	if out == nil {
		out = marshal(redactValue(obj))
	}
	if !auth.Empty() {
		if s := auth.Redact(string(out)); s != string(out) {
			if !json.Valid([]byte(s)) {
				// A secret cut through JSON syntax: keep nothing of it.
				return json.RawMessage(`{"[arguments]":"` + Redacted + `"}`)
			}
			out = []byte(s)
		}
	}
	if len(out) <= audit.MaxArgumentBytes {
		return out
	}
	var back any
	_ = json.Unmarshal(out, &back)
	if short := marshal(shorten(back)); len(short) <= audit.MaxArgumentBytes {
		return short
	}
	return marshal(map[string]any{"[arguments]": fmt.Sprintf("%d bytes, more than the %d the audit keeps", len(out), audit.MaxArgumentBytes)})
}

// notJSON is what the audit keeps of arguments that do not parse.
func notJSON(args json.RawMessage) json.RawMessage {
	return marshal(map[string]any{"[arguments]": fmt.Sprintf("%d bytes that are not JSON", len(args))})
}

// decodeArguments parses a call's arguments, numbers kept exact; empty
// and null are an empty object.
func decodeArguments(args json.RawMessage) (any, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return map[string]any{}, nil
	}
	if v, ok := jsonscan.Decode(trimmed); ok {
		return v, nil // the usual arguments, read as the decoder below reads them
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the first JSON value")
	}
	return v, nil
}

// redactJSON is the JSON document raw, as an upstream wrote it, without
// auth's secrets; nil when what is left is not valid JSON. Auth.Redact
// knows a secret as written plainly and as Go's encoder escapes it;
// another encoder may escape more ("\/", "\u002B"), so a document with
// any escape, or with bytes that are not UTF-8, is first written again
// by Go.
func redactJSON(auth *sources.Auth, raw []byte) []byte {
	if auth.Empty() {
		return raw
	}
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		v, err := decodeArguments(raw)
		if err != nil {
			return nil
		}
		raw = marshal(v)
	}
	s := auth.Redact(string(raw))
	if s == string(raw) {
		return raw
	}
	if !json.Valid([]byte(s)) {
		return nil // a secret cut through JSON syntax: keep nothing of it
	}
	return []byte(s)
}

func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// hasSecretKeys reports whether any object in v has a secret-looking key.
func hasSecretKeys(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey(k) || hasSecretKeys(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasSecretKeys(e) {
				return true
			}
		}
	}
	return false
}

// redactValue copies v with the values of secret-looking keys replaced.
func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if secretKey(k) && e != nil {
				out[k] = Redacted
			} else {
				out[k] = redactValue(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e)
		}
		return out
	}
	return v
}

// maxKeptString is how much of a long string value the audit keeps when
// the arguments are too large as they are.
const maxKeptString = 256

// shorten cuts long strings and long arrays.
func shorten(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = shorten(e)
		}
	case []any:
		if len(x) > 20 {
			x = append(x[:20:20], fmt.Sprintf("… %d more items", len(x)-20))
		}
		for i, e := range x {
			x[i] = shorten(e)
		}
		return x
	case string:
		if len(x) > maxKeptString {
			cut := maxKeptString
			for cut > 0 && !utf8.RuneStart(x[cut]) {
				cut--
			}
			return fmt.Sprintf("%s… [%d bytes]", x[:cut], len(x))
		}
	}
	return v
}

// secretWords are the parts of a key (lower case, without separators)
// that make it secret-looking.
var secretWords = [][]byte{
	[]byte("password"), []byte("passwd"), []byte("passphrase"), []byte("secret"), []byte("apikey"),
	[]byte("authorization"), []byte("cookie"), []byte("privatekey"), []byte("credential"),
	[]byte("accesskey"), []byte("sessionid"), []byte("bearer"),
}

// secretKey reports whether an argument's key names a secret: it holds one
// of secretWords, ends in "token" (access_token, authToken), or is "auth",
// "pwd" or "pass". Case, "-", "_", "." and spaces do not matter.
func secretKey(k string) bool {
	var buf [64]byte
	b := buf[:0]
	for i := 0; i < len(k) && len(b) < cap(b); i++ {
		c := k[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c == '-' || c == '_' || c == '.' || c == ' ':
			continue
		}
		b = append(b, c)
	}
	switch string(b) {
	case "auth", "pwd", "pass":
		return true
	}
	if bytes.HasSuffix(b, []byte("token")) {
		return true
	}
	for _, w := range secretWords {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}
