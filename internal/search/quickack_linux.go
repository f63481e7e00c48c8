package search

import (
	"net"
	"syscall"
)

// quickAckConn turns Linux's delayed ACK off before every read. Meilisearch
// does not set TCP_NODELAY on its sockets, so on a kept-alive connection
// the first segment of a response waits (Nagle) for the ACK of the previous
// response, which Linux delays by 40 ms: every search but the first on a
// connection took 40 ms more than Meilisearch spent on it. TCP_QUICKACK
// is not sticky, hence before every read.
type quickAckConn struct {
	net.Conn
	raw syscall.RawConn
}

func withQuickAck(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &quickAckConn{Conn: c, raw: raw}
}

func (c *quickAckConn) Read(p []byte) (int, error) {
	_ = c.raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
	return c.Conn.Read(p)
}
