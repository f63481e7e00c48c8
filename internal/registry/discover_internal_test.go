package registry

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sources"
)

func TestRedactJSON(t *testing.T) {
	auth := &sources.Auth{}
	auth.SetHeader("X-Api-Key", `k<&>"\y`)
	auth.SetQuery("pin", "424242")
	tests := []struct{ name, in, want string }{
		{"no secret, kept byte for byte", `{ "type" : "object",  "b":1, "a":"<&>" }`, `{ "type" : "object",  "b":1, "a":"<&>" }`},
		{"escaped for HTML", `{"default":"k\u003c\u0026\u003e\"\\y"}`, `{"default":"` + sources.Mask + `"}`},
		{"escaped plainly", `{"default":"k<&>\"\\y","enum":["x k<&>\"\\y x",1]}`, `{"default":"` + sources.Mask + `","enum":["x ` + sources.Mask + ` x",1]}`},
		{"escaped needlessly", `{"default":"\u006b<&>\"\\\u0079"}`, `{"default":"` + sources.Mask + `"}`},
		{"a key", `{"properties":{"424242":{"type":"string"}}}`, `{"properties":{"` + sources.Mask + `":{"type":"string"}}}`},
		{"a number", `{"type":"integer","default":424242,"maximum":4242420}`, `{"default":"` + sources.Mask + `","maximum":"` + sources.Mask + `0","type":"integer"}`},
		{"not an object", `["424242"]`, `["` + sources.Mask + `"]`},
		{"not JSON", `{"default": 424242`, `"{\"default\": ` + sources.Mask + `"`},
		{"empty", ``, ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(redactJSON(json.RawMessage(tc.in), auth))
			if got != tc.want {
				t.Errorf("redactJSON(%s) = %s, want %s", tc.in, got, tc.want)
			}
			if tc.in != "" && !json.Valid([]byte(got)) {
				t.Errorf("redactJSON(%s) = %s is not JSON", tc.in, got)
			}
			if strings.Contains(got, "424242") || strings.Contains(got, "k<") || strings.Contains(got, `k\u003c`) {
				t.Errorf("redactJSON(%s) = %s shows a secret", tc.in, got)
			}
		})
	}
}
