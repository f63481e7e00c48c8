package httphead_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/toolgate/toolgate/internal/httphead"
)

func TestField(t *testing.T) {
	for line, want := range map[string][3]string{
		"content-type: application/json ": {"Content-Type", "application/json", "ok"},
		"X-Empty:":                        {"X-Empty", "", "ok"},
		"x-a:\t a b \t":                   {"X-A", "a b", "ok"},
		"X-A : b":                         {},
		" X-A: b":                         {},
		"X-A b":                           {},
		"X(A): b":                         {},
		"X-A: a\x00b":                     {},
	} {
		key, value, ok := httphead.Field(line)
		if got := [3]string{key, value, map[bool]string{true: "ok"}[ok]}; got != want {
			t.Errorf("%q: got %q, want %q", line, got, want)
		}
	}
}

// A repeated name's values are its own: appending to one never writes
// over the value another name shares the array with.
func TestFieldsKeepValuesApart(t *testing.T) {
	f := httphead.NewFields(3)
	f.Add("A", "1")
	f.Add("B", "2")
	f.Add("A", "3")
	f.Add("C", "4")
	want := http.Header{"A": {"1", "3"}, "B": {"2"}, "C": {"4"}}
	if !reflect.DeepEqual(f.Header, want) {
		t.Fatalf("got %v, want %v", f.Header, want)
	}
}
