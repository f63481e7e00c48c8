package main

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/config"
)

func TestGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, target uint64
		want         int
	}{
		{0, 256 * mib, minGCPercent},
		{16 * mib, 256 * mib, 1500},
		{1 * mib, 256 * mib, maxGCPercent},
		{100 * mib, 256 * mib, 156},
		{128 * mib, 256 * mib, minGCPercent},
		{900 * mib, 256 * mib, minGCPercent},
	} {
		if got := gcPercent(c.live, c.target); got != c.want {
			t.Errorf("gcPercent(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.target/mib, got, c.want)
		}
	}
}

// currentGCPercent reads the collector's percent.
func currentGCPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestTuneGC: after a collection the percent lets this small heap grow
// toward the target; GOGC set by the operator leaves it alone.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(currentGCPercent())
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	log := slog.New(slog.DiscardHandler)

	debug.SetGCPercent(100)
	stop := tuneGC(config.Config{GCTargetMiB: 4096, MemoryLimitMiB: 16384, GoRuntimeEnv: true}, log)
	stop()
	if p := currentGCPercent(); p != 100 {
		t.Fatalf("GOGC set: percent %d, want it left at 100", p)
	}

	stop = tuneGC(config.Config{GCTargetMiB: 4096, MemoryLimitMiB: 16384}, log)
	defer stop()
	if l := debug.SetMemoryLimit(-1); l != 16384<<20 {
		t.Fatalf("memory limit %d", l)
	}
	deadline := time.Now().Add(10 * time.Second)
	for currentGCPercent() <= minGCPercent {
		if time.Now().After(deadline) {
			t.Fatal("the percent never rose above Go's default")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if p := currentGCPercent(); p <= minGCPercent || p > maxGCPercent {
		t.Fatalf("percent after collections: %d", p)
	}
}
