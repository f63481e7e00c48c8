//go:build !linux

package search

import "net"

// withQuickAck is Linux's delayed-ACK workaround; elsewhere a no-op.
func withQuickAck(c net.Conn) net.Conn { return c }
