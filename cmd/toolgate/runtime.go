package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/config"
)

// tuning is how `serve` runs the Go runtime: its garbage collector and its
// profiling endpoint.
type tuning struct {
	pprofAddr string
}

// tuningFlags registers serve's runtime flags.
func tuningFlags(fs *flag.FlagSet) *tuning {
	t := &tuning{}
	fs.StringVar(&t.pprofAddr, "pprof", "",
		"serve Go's runtime profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060; keep it off public interfaces")
	return t
}

// start applies the tuning; stop ends what it started.
func (t *tuning) start(cfg config.Config, log *slog.Logger) (stop func(), err error) {
	stopGC := tuneGC(cfg, log)
	stopPprof, err := t.servePprof(log)
	if err != nil {
		stopGC()
		return nil, err
	}
	return func() { stopPprof(); stopGC() }, nil
}

// servePprof serves the runtime profiles when --pprof names an address.
func (t *tuning) servePprof(log *slog.Logger) (stop func(), err error) {
	if t.pprofAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", t.pprofAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--pprof): %w", t.pprofAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof endpoint stopped", "error", err)
		}
	}()
	log.Info("serving runtime profiles", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

// The garbage collector's percent (GOGC) stays within these bounds.
const (
	minGCPercent = 100
	maxGCPercent = 5000
)

// tuneGC lets the heap grow toward cfg.GCTargetMiB before collecting: a
// call through /mcp allocates memory that dies at once (a few KiB on the
// fast path, a few hundred on the SDK's, most of it its JSON decoders),
// while the live heap is small, so Go's default of collecting each time
// the heap doubles spends much of a call's CPU collecting. Too large a
// target costs too: every allocation then touches memory the CPU has not
// used lately (48 MiB measured about 5% less CPU per call than 256). After every collection the percent is set so the
// next one starts near the target, at least at twice the live heap (Go's
// default, when the live heap outgrows half the target). The soft memory
// limit keeps the process inside its container either way. GOGC or
// GOMEMLIMIT set by the operator win.
func tuneGC(cfg config.Config, log *slog.Logger) (stop func()) {
	if cfg.GoRuntimeEnv {
		log.Info("garbage collector set by GOGC/GOMEMLIMIT")
		return func() {}
	}
	limit := uint64(cfg.MemoryLimitMiB) << 20
	if limit == 0 {
		limit = containerMemory() / 10 * 9
	}
	if limit > 0 {
		debug.SetMemoryLimit(int64(min(limit, math.MaxInt64)))
	}
	target := uint64(cfg.GCTargetMiB) << 20
	if limit > 0 {
		target = min(target, limit/2)
	}
	if target == 0 {
		return func() {}
	}
	g := &gcTuner{target: target, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	g.tune()
	g.arm()
	log.Info("garbage collector tuned", "target_mib", target>>20, "memory_limit_mib", limit>>20)
	return func() {
		g.stopped.Store(true)
		debug.SetGCPercent(minGCPercent)
	}
}

// gcTuner sets the collector's percent after every collection.
type gcTuner struct {
	target  uint64
	stopped atomic.Bool
	sample  []metrics.Sample
}

// gcCycle is garbage whose finalizer runs once its collection is over.
type gcCycle struct{ _ [16]byte }

// arm makes the next collection call tune, which arms the one after.
func (g *gcTuner) arm() {
	runtime.SetFinalizer(new(gcCycle), func(*gcCycle) {
		if g.stopped.Load() {
			return
		}
		g.tune()
		g.arm()
	})
}

func (g *gcTuner) tune() {
	metrics.Read(g.sample)
	if g.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	debug.SetGCPercent(gcPercent(g.sample[0].Value.Uint64(), g.target))
}

// gcPercent is the GOGC at which a live heap of live bytes is next
// collected near target bytes.
func gcPercent(live, target uint64) int {
	if live == 0 || live >= target/2 {
		return minGCPercent
	}
	return int(min(max((target-live)*100/live, minGCPercent), maxGCPercent))
}

// containerMemory is the cgroup's memory limit (v2, else v1), 0 when none.
func containerMemory() uint64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		// "max", or v1's "no limit" (a page-aligned huge number).
		if err != nil || n >= 1<<62 {
			return 0
		}
		return n
	}
	return 0
}
