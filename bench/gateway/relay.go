package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// The floor: a bare TCP relay in front of the MCP upstream.
//
// Any gateway written in Go, whatever it does with a call, at least reads
// the agent's bytes, writes them to the upstream, reads the answer and
// writes it back, over loopback, on the same cores as everything else.
// The relay does only that: one upstream connection per client
// connection, plain reads and writes, no parsing. Its CPU per call is the
// part of toolgate's that no work on toolgate can remove; toolgate's CPU
// above it is what parsing, authentication, policy, validation and audit
// cost.

// relayCommand is the argument on which this program relays to the
// address that follows it, in a process of its own.
const relayCommand = "relay"

// relay is the relay's process.
type relay struct {
	addr  string // where it listens
	pid   int
	close func()
}

// cpu is the relay's CPU time so far.
func (r *relay) cpu() time.Duration {
	if r == nil {
		return 0
	}
	own, _, _ := procTimes(r.pid)
	return own
}

// startRelay starts this program as a relay to target (host:port).
func startRelay(target string) (*relay, error) {
	pid, addr, stop, err := startSelf("the relay's process", relayCommand, target)
	if err != nil {
		return nil, err
	}
	return &relay{addr: addr, pid: pid, close: stop}, nil
}

// serveRelay relays every connection to target until SIGTERM, after
// printing its address.
func serveRelay(target string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go relayConn(c, target)
	}
}

// relayConn pumps c to a new connection to target and back until either
// side closes.
func relayConn(c net.Conn, target string) {
	defer c.Close()
	u, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{})
	go func() {
		pump(u, c)
		u.Close()
		close(done)
	}()
	pump(c, u)
	c.Close()
	<-done
}

// pump copies src to dst with plain reads and writes: io.Copy would
// splice between the sockets, which no gateway that looks at a call can.
func pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
