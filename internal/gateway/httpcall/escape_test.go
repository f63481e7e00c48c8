package httpcall

import "testing"

// allowReserved at the encoder (ParamRef.AllowReserved, FieldRef.AllowReserved);
// TestAllowReservedAndContentOnTheWire shows it from discovery to the wire.
func TestAllowReserved(t *testing.T) {
	cases := []struct {
		value         string
		allowReserved bool
		want          string
	}{
		{"/a/b?c=d:e@f", false, "next=%2Fa%2Fb%3Fc%3Dd%3Ae%40f"},
		{"/a/b?c=d:e@f", true, "next=/a/b?c=d:e@f"},
		// A query cannot carry these as they are, reserved or not.
		{"a#b&c+d[e]", true, "next=a%23b%26c%2Bd%5Be%5D"},
		// Existing escapes pass through; a lone % does not.
		{"%2F%zz 100%", true, "next=%2F%25zz%20100%25"},
	}
	for _, tc := range cases {
		v, err := flatten(tc.value)
		if err != nil {
			t.Fatal(err)
		}
		got, err := queryPairs("next", "form", true, tc.allowReserved, tc.value, v)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%q allowReserved=%v: got %q, want %q", tc.value, tc.allowReserved, got, tc.want)
		}
	}
}
