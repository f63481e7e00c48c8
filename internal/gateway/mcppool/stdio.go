package mcppool

import (
	"io"
	"time"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/stdioserver"
)

// startProcess starts cfg's command with the credential's variables over
// the configuration's. A command that cannot start is a configuration no
// retry fixes.
func startProcess(cfg *sources.MCPConfig, auth *sources.Auth) (*stdioserver.Process, error) {
	run := *cfg
	if auth != nil {
		run.Env = sources.Overlay(cfg.Env, auth.Env)
	}
	p, err := stdioserver.Start(&run)
	if err != nil {
		return nil, &configError{"cannot start the server: " + err.Error()}
	}
	return p, nil
}

// exitReason says how the process ended with the tail of its stderr, or ""
// while it runs. It gives a dying process a moment to be reaped.
func exitReason(p *stdioserver.Process) string {
	if !p.WaitExit(300 * time.Millisecond) {
		return ""
	}
	why := "the server process exited (" + p.Status() + ")"
	if s := p.Stderr(); s != "" {
		why += "; its stderr ends with: " + s
	}
	return why
}

// nopWriteCloser keeps the SDK from closing stdin: Stop does, in order.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
