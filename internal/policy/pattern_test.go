package policy

import (
	"strings"
	"testing"
)

func TestCheckPattern(t *testing.T) {
	tests := []struct {
		pattern string
		wantErr string // "" for valid
	}{
		{"github.repos.get", ""},
		{"github.repos.*", ""},
		{"stripe.**", ""},
		{"**", ""},
		{"*", ""},
		{"**.delete", ""},
		{"a.**.b.*.c", ""},
		{"My_Tool-2.x", ""},
		{"", "pattern is empty"},
		{"github..repos", "segment 2 is empty"},
		{".github", "segment 1 is empty"},
		{"github.", "segment 2 is empty"},
		{"stripe.a**", "`**` must be a whole segment (segment 2 is \"a**\")"},
		{"stripe.***", "`**` must be a whole segment"},
		{"github.create*", "`*` must be a whole segment (segment 2 is \"create*\")"},
		{"github.re pos", `segment 2 ("re pos") has ' '`},
		{"github/repos", `segment 1 ("github/repos") has '/'`},
		{"héllo", `segment 1 ("héllo") has 'é'`},
		{strings.Repeat("a", MaxPatternLen), ""},
		{strings.Repeat("a", MaxPatternLen+1), "pattern is 301 characters long; the limit is 300"},
	}
	for _, tt := range tests {
		err := CheckPattern(tt.pattern)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("CheckPattern(%q) = %v, want nil", tt.pattern, err)
		case tt.wantErr != "" && err == nil:
			t.Errorf("CheckPattern(%q) = nil, want an error containing %q", tt.pattern, tt.wantErr)
		case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
			t.Errorf("CheckPattern(%q) = %q, want it to contain %q", tt.pattern, err, tt.wantErr)
		}
		if got, want := validPattern(tt.pattern), tt.wantErr == ""; got != want {
			t.Errorf("validPattern(%q) = %v, want %v", tt.pattern, got, want)
		}
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		// literals
		{"github.repos.get", "github.repos.get", true},
		{"github.repos.get", "github.repos.list", false},
		{"github.repos.get", "github.repos", false},
		{"github.repos", "github.repos.get", false},
		{"github.repos.get", "GitHub.repos.get", false},
		{"github", "githubx", false},
		// `*` is exactly one non-empty segment
		{"github.repos.*", "github.repos.get", true},
		{"github.repos.*", "github.repos", false},
		{"github.repos.*", "github.repos.a.b", false},
		{"github.repos.*", "github.repos.", false},
		{"*.delete", "files.delete", true},
		{"*.delete", "files.x.delete", false},
		{"*", "anything", true},
		{"*", "a.b", false},
		{"*.*", "a.b", true},
		// `**` is zero or more segments
		{"stripe.**", "stripe.x", true},
		{"stripe.**", "stripe.charges.create", true},
		{"stripe.**", "stripe", true},
		{"stripe.**", "stripex.charges", false},
		{"stripe.**", "github.stripe.x", false},
		{"**", "a", true},
		{"**", "a.b.c.d", true},
		{"**.delete", "delete", true},
		{"**.delete", "files.delete", true},
		{"**.delete", "a.b.c.delete", true},
		{"**.delete", "a.b.c.delete.x", false},
		{"a.**.b", "a.b", true},
		{"a.**.b", "a.x.y.b", true},
		{"a.**.b", "a.x.y.c", false},
		{"a.**.b.*", "a.b.b.c", true},
		{"a.**.b.*", "a.b.b", true},
		{"a.**.b.*", "a.x.b", false},
		{"**.**", "a", true},
		{"a.**.**.b", "a.b", true},
		{"**.x.**.y", "a.x.b.x.c.y", true},
		{"**.x.**.y", "a.x.b.y.c", false},
		{"*.**", "a", true},
		{"**.*", "a.b", true},
		{"**.*", "", false},
		// dots in an unusual place
		{"a.*", "a..", false},
		{"a.**", "a..b", true},
		// invalid patterns match nothing
		{"", "", false},
		{"a..b", "a..b", false},
		{"a*", "a*", false},
	}
	for _, tt := range tests {
		if got := MatchPattern(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
		if got := refMatch(tt.pattern, tt.path); got != tt.want {
			t.Errorf("refMatch(%q, %q) = %v, want %v (the reference disagrees with the table)", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestMatchPatternAllocatesNothing(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		MatchPattern("a.**.b.*", "a.x.y.z.b.c")
		MatchPattern("stripe.**", "github.repos.get")
		MatchPattern("bad*", "x")
	})
	if allocs != 0 {
		t.Errorf("MatchPattern allocates %v times per run, want 0", allocs)
	}
}

// refMatch is the obvious recursive matcher over split segments, the
// reference MatchPattern is fuzzed against.
func refMatch(pattern, path string) bool {
	if CheckPattern(pattern) != nil {
		return false
	}
	return refSegs(strings.Split(pattern, "."), strings.Split(path, "."))
}

func refSegs(ps, ss []string) bool {
	if len(ps) == 0 {
		return len(ss) == 0
	}
	if ps[0] == "**" {
		return refSegs(ps[1:], ss) || (len(ss) > 0 && refSegs(ps, ss[1:]))
	}
	if len(ss) == 0 {
		return false
	}
	if ps[0] == "*" {
		return ss[0] != "" && refSegs(ps[1:], ss[1:])
	}
	return ps[0] == ss[0] && refSegs(ps[1:], ss[1:])
}

func FuzzMatchPattern(f *testing.F) {
	seeds := [][2]string{
		{"github.repos.*", "github.repos.get"},
		{"stripe.**", "stripe.charges.create"},
		{"stripe.**", "stripe"},
		{"**.delete", "a.b.delete"},
		{"a.**.b.**.c", "a.x.b.y.b.c"},
		{"*.*.**", "a.b"},
		{"**.*.**", "."},
		{"a..b", "a..b"},
		{"x*", "xy"},
		{"", ""},
		{"**", ""},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		// Keep the reference's exponential worst case in check.
		if strings.Count(pattern, "**") > 6 || len(path) > 200 {
			return
		}
		got := MatchPattern(pattern, path)
		if want := refMatch(pattern, path); got != want {
			t.Fatalf("MatchPattern(%q, %q) = %v, reference says %v", pattern, path, got, want)
		}
		if got && CheckPattern(pattern) != nil {
			t.Fatalf("invalid pattern %q matched %q", pattern, path)
		}
		if CheckPattern(pattern) == nil && !MatchPattern(pattern, pattern) && !strings.Contains(pattern, "*") {
			t.Fatalf("literal pattern %q does not match itself", pattern)
		}
	})
}
