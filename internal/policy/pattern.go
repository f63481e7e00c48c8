package policy

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxPatternLen is the longest path pattern a rule may carry.
const MaxPatternLen = 300

// CheckPattern reports whether pattern is a valid path pattern, and if not,
// says what is wrong in a sentence a person can act on.
//
// A pattern is dot-separated segments, like a tool path. Each segment is a
// literal (ASCII letters, digits, `_` and `-`), `*` or `**`:
//
//   - a literal matches the same path segment exactly (case-sensitive);
//   - `*` matches exactly one non-empty segment: `github.repos.*` matches
//     `github.repos.get` but not `github.repos` or `github.repos.a.b`;
//   - `**` matches zero or more segments: `stripe.**` matches `stripe.x`
//     and `stripe.charges.create`, and also `stripe` itself (zero
//     segments), and `**` alone matches every path.
//
// Wildcards are whole segments only: `create*` or `a**` are refused rather
// than read as a prefix match.
func CheckPattern(pattern string) error {
	if pattern == "" {
		return fmt.Errorf("pattern is empty; use ** for every tool")
	}
	if len(pattern) > MaxPatternLen {
		return fmt.Errorf("pattern is %d characters long; the limit is %d", len(pattern), MaxPatternLen)
	}
	n := 0
	for start := 0; start <= len(pattern); {
		end := segEnd(pattern, start)
		n++
		if err := checkSegment(pattern[start:end], n); err != nil {
			return err
		}
		start = end + 1
	}
	return nil
}

func checkSegment(seg string, n int) error {
	switch {
	case seg == "":
		return fmt.Errorf("segment %d is empty (two dots in a row, or a dot at an end)", n)
	case seg == "*" || seg == "**":
		return nil
	case strings.Contains(seg, "**"):
		return fmt.Errorf("`**` must be a whole segment (segment %d is %q)", n, seg)
	case strings.Contains(seg, "*"):
		return fmt.Errorf("`*` must be a whole segment (segment %d is %q)", n, seg)
	}
	for _, r := range seg {
		if r >= utf8.RuneSelf || !literalByte(byte(r)) {
			return fmt.Errorf("segment %d (%q) has %q; a segment is letters, digits, _ and -, or * or **",
				n, seg, r)
		}
	}
	return nil
}

func literalByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

// MatchPattern reports whether path matches pattern (see [CheckPattern]
// for the syntax). An invalid pattern matches nothing. It compiles
// nothing and allocates nothing: segments are compared in place, and `**`
// is matched with the usual single back-tracking point of a glob matcher,
// so the time is linear in the lengths for patterns with one `**` and at
// most quadratic with several.
func MatchPattern(pattern, path string) bool {
	return validPattern(pattern) && matchValid(pattern, path)
}

// validPattern is CheckPattern(p) == nil without building a message.
func validPattern(p string) bool {
	if p == "" || len(p) > MaxPatternLen {
		return false
	}
	for start := 0; start <= len(p); {
		end := segEnd(p, start)
		seg := p[start:end]
		if seg != "*" && seg != "**" {
			if seg == "" {
				return false
			}
			for i := 0; i < len(seg); i++ {
				if !literalByte(seg[i]) {
					return false
				}
			}
		}
		start = end + 1
	}
	return true
}

// matchValid is MatchPattern for a pattern already known to be valid.
//
// Positions are byte offsets of a segment's start; a position past the
// string's length means every segment has been consumed.
func matchValid(p, s string) bool {
	pi, si := 0, 0
	starP, starS := -1, -1 // where to resume after the last `**`
	for si <= len(s) {
		se := segEnd(s, si)
		if pi <= len(p) {
			pe := segEnd(p, pi)
			seg := p[pi:pe]
			if seg == "**" {
				// Try zero segments first; remember where to come back.
				starP, starS = pe+1, si
				pi = pe + 1
				continue
			}
			if (seg == "*" && se > si) || seg == s[si:se] {
				pi, si = pe+1, se+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last `**` swallow one more segment and retry.
		starS = segEnd(s, starS) + 1
		pi, si = starP, starS
	}
	// The path is consumed: what is left of the pattern must all be `**`.
	for pi <= len(p) {
		pe := segEnd(p, pi)
		if p[pi:pe] != "**" {
			return false
		}
		pi = pe + 1
	}
	return true
}

// segEnd returns the index of the dot ending the segment that starts at i,
// or len(s) for the last segment.
func segEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '.'); j >= 0 {
		return i + j
	}
	return len(s)
}
