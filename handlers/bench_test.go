package handlers_test

import (
	"net/http"
	"testing"
)

// BenchmarkConsolePage measures a signed-in workspace page through the real
// router, session store and PostgreSQL: session load, tenant resolution, the
// sidebar's queries and the templ render.
func BenchmarkConsolePage(b *testing.B) {
	benchPage(b, "/o/acme/w/default")
}

// BenchmarkAPIWithToken measures a token-authenticated API list.
func BenchmarkAPIWithToken(b *testing.B) {
	benchPage(b, "/api/v1/orgs/acme/workspaces")
}

func benchPage(b *testing.B, path string) {
	f := newFixture(b)
	c := f.owner
	if path[:5] == "/api/" {
		c = tokenClient(b, f.env, "owner@acme.test")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res := c.get(path); res.status != http.StatusOK {
			b.Fatalf("%s: %d", path, res.status)
		}
	}
}
