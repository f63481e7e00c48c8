package mcppool_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/sources"
)

// BenchmarkCallEcho is one echo call through a warm pool.
func BenchmarkCallEcho(b *testing.B) {
	b.Run("stdio-everything", func(b *testing.B) { benchEcho(b, everything(b)) })
	b.Run("streamable-http-go", func(b *testing.B) {
		_, cfg := serveHTTP(b, nil)
		benchEcho(b, cfg)
	})
}

func benchEcho(b *testing.B, cfg *sources.MCPConfig) {
	p := newPool(b, mcppool.Options{})
	key := keyOf("src_bench", cfg, nil)
	args := map[string]any{"message": "bench"}
	if _, err := p.Call(b.Context(), key, cfg, nil, "echo", args, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Call(b.Context(), key, cfg, nil, "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}
