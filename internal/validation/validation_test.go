package validation

import "testing"

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Acme":                  "acme",
		"Data Team":             "data-team",
		"  Ünïcode & Co. (EU) ": "n-code-co-eu",
		"---":                   "",
		"a_b":                   "a-b",
		"This is a very long organization name that goes on": "this-is-a-very-long-organization-name-th",
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
		if got := Slugify(in); got != "" {
			e := Errors{}
			e.Slug("slug", got)
			if len(e) != 0 {
				t.Errorf("Slugify(%q) = %q, which Slug refuses: %v", in, got, e)
			}
		}
	}
}

func TestFieldChecks(t *testing.T) {
	cases := []struct {
		name  string
		check func(Errors)
		ok    bool
	}{
		{"plain name", func(e Errors) { e.Name("n", "Acme Robotics", 80) }, true},
		{"name with allowed punctuation", func(e Errors) { e.Name("n", "O'Brien & Sons (EU), Ltd.", 80) }, true},
		{"empty name", func(e Errors) { e.Name("n", "", 80) }, false},
		{"html in name", func(e Errors) { e.Name("n", "<b>x</b>", 80) }, false},
		{"control character", func(e Errors) { e.Name("n", "a\x00b", 80) }, false},
		{"too long", func(e Errors) { e.Name("n", string(make([]rune, 81)), 80) }, false},
		{"slug", func(e Errors) { e.Slug("s", "data-team-2") }, true},
		{"slug with capitals", func(e Errors) { e.Slug("s", "Data") }, false},
		{"slug with trailing hyphen", func(e Errors) { e.Slug("s", "data-") }, false},
		{"email", func(e Errors) { e.Email("e", "ada@example.com") }, true},
		{"email with display name", func(e Errors) { e.Email("e", "Ada <ada@example.com>") }, false},
		{"email without domain dot", func(e Errors) { e.Email("e", "ada@example") }, false},
		{"short password", func(e Errors) { e.Password("p", "123456789") }, false},
		{"password", func(e Errors) { e.Password("p", "1234567890") }, true},
	}
	for _, tc := range cases {
		e := Errors{}
		tc.check(e)
		if (len(e) == 0) != tc.ok {
			t.Errorf("%s: errors %v, want ok=%v", tc.name, e, tc.ok)
		}
	}
}
