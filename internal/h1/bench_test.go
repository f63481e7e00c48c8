package h1_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/h1"
)

// BenchmarkRoundTrip sends a small POST and reads its small answer over
// kept-alive loopback connections, through net/http's transport and
// through h1 over it: the shape of a gateway's upstream call. Besides
// the time per call it reports the process's CPU per call (client and
// the in-process server; the server's share is the same for both), one
// caller at a time and 32 at once.
//
//	go test ./internal/h1 -run '^$' -bench RoundTrip -benchmem
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	const msg = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	call := func(b *testing.B, client *http.Client) {
		resp, err := client.Post(srv.URL, "application/json", strings.NewReader(msg))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, c := range []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"net-http", func() http.RoundTripper { return &http.Transport{MaxIdleConnsPerHost: 64} }},
		{"h1", func() http.RoundTripper { return h1.New(&http.Transport{MaxIdleConnsPerHost: 64}) }},
	} {
		for _, callers := range []int{1, 32} {
			b.Run(c.name+"/callers="+map[int]string{1: "1", 32: "32"}[callers], func(b *testing.B) {
				client := &http.Client{Transport: c.rt()}
				defer client.CloseIdleConnections()
				b.ReportAllocs()
				before := cpu()
				if callers == 1 {
					for b.Loop() {
						call(b, client)
					}
				} else {
					b.SetParallelism(callers / 2) // GOMAXPROCS is 2 on these machines
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							call(b, client)
						}
					})
				}
				b.ReportMetric(float64((cpu()-before).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpu is the process's user and system time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
