package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/stdioserver"
)

// errServerExited cancels a stdio session when its process ends.
var errServerExited = errors.New("the server process exited")

func discoverStdio(ctx context.Context, cfg *sources.MCPConfig, opts Options) (*sources.Discovery, error) {
	p, err := stdioserver.Start(cfg)
	if err != nil {
		return nil, err
	}
	defer p.Stop()

	// The session ends as soon as the process does, even when a
	// grandchild keeps its stdout open.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-p.Exited():
			cancel(errServerExited)
		case <-ctx.Done():
		}
	}()

	// Closing the session must not close the pipes: stop does, after it
	// has noted the server's descendants, which the server's exit on
	// stdin's EOF would orphan.
	t := &sdk.IOTransport{Reader: io.NopCloser(p.Stdout()), Writer: nopWriteCloser{p.Stdin()}}
	return session(ctx, t, opts, func(ctx context.Context, ph phase, err error) error {
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			return nil // the server answered: it said what went wrong
		}
		return explainStdio(ctx, p, ph, err, opts)
	})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// explainStdio reads a failure through what the process did: exited, or
// wrote something that is not MCP on stdout. A timeout gets the tail of
// stderr.
func explainStdio(ctx context.Context, s *stdioserver.Process, p phase, err error, opts Options) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, errServerExited) {
		e := explainContext(ctx, p, opts)
		if e == nil || !errors.Is(cause, errInitTimeout) && !errors.Is(cause, errDiscoveryTimeout) {
			return e
		}
		if t := s.Stderr(); t != "" {
			return fmt.Errorf("%w; its stderr ends with: %s", e, t)
		}
		return e
	}
	// The connection usually breaks an instant before the process is reaped.
	if s.WaitExit(stdioserver.StdinGrace) {
		msg := "the server exited before answering initialize"
		if p == phaseList {
			msg = "the server exited while listing its tools"
		}
		detail := s.Stderr()
		if detail == "" {
			if g := s.Garbage(); g != "" {
				detail = fmt.Sprintf("it wrote on stdout: %q", g)
			}
		}
		if detail == "" {
			return fmt.Errorf("%s (%s) without writing anything on stderr", msg, s.Status())
		}
		return fmt.Errorf("%s (%s): %s", msg, s.Status(), detail)
	}
	if g := s.Garbage(); g != "" {
		return fmt.Errorf("the server wrote something that is not MCP on stdout: %q", g)
	}
	// JSON that is not JSON-RPC fails in the SDK's decoder.
	if malformed(err) {
		if line := s.LastLine(); line != "" {
			return fmt.Errorf("the server wrote something that is not MCP on stdout: %q", line)
		}
	}
	return nil
}

// malformed reports the SDK's errors for a message it could not decode.
func malformed(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"invalid message version tag", "invalid character", "cannot unmarshal", "unexpected end of JSON", "invalid trailing data", "empty batch"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
