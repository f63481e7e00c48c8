// Command openapi measures turning GitHub's REST description into tools:
// it reads the spec, runs openapi.Build once and prints the wall time, the
// tool count and the process's peak resident memory.
//
//	go run ./bench/openapi [-spec internal/testenv/peers/specs/api.github.com.json]
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/sources/openapi"
)

func main() {
	spec := flag.String("spec", "internal/testenv/peers/specs/api.github.com.json", "OpenAPI document to build (install GitHub's with: make test-deps)")
	flag.Parse()
	if err := run(*spec); err != nil {
		fmt.Fprintln(os.Stderr, "bench/openapi:", err)
		os.Exit(1)
	}
}

// run builds the document once and reports what it cost.
func run(spec string) error {
	doc, err := os.ReadFile(spec)
	if err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	start := time.Now()
	disc, err := openapi.Build(doc, openapi.Options{})
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("build %s: %w", spec, err)
	}
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return fmt.Errorf("getrusage: %w", err)
	}
	fmt.Printf("spec:      %s (%.1f MB)\n", spec, float64(len(doc))/1e6)
	fmt.Printf("wall:      %s\n", wall.Round(time.Millisecond))
	fmt.Printf("tools:     %d (%d warnings)\n", len(disc.Tools), len(disc.Warnings))
	fmt.Printf("peak RSS:  %.1f MiB\n", float64(usage.Maxrss)/1024) // Maxrss is in KiB on Linux
	return nil
}
