package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/toolgate/toolgate/db"
)

// lookupTimeout bounds a shared lookup, which runs without the
// cancellation of the call that started it: others wait on it too.
const lookupTimeout = 30 * time.Second

// lookupKey is one caller's lookup of one path.
type lookupKey struct {
	org, workspace, user int64
	path                 string
}

// lookup is one run of Store.CallTool, shared by the calls it serves.
type lookup struct {
	done chan struct{}
	tool db.CallTool
	err  error
}

// lookups coalesces concurrent lookups of one path by one caller. A call
// that arrives while that lookup is running does not reuse it (it read
// the database before the call arrived): it waits for the next one, which
// starts as soon as the running one ends and serves every call that
// arrived meanwhile. Each call so gets a result read after it arrived, and
// a tool many sessions call at once costs one query per round, not one
// per call.
type lookups struct {
	mu      sync.Mutex
	running map[lookupKey]*lookup
	next    map[lookupKey]*lookup
}

// callTool is Store.CallTool through the coalescing.
func (g *Gateway) callTool(ctx context.Context, c Caller, path string) (db.CallTool, error) {
	k := lookupKey{c.OrgID, c.WorkspaceID, c.UserID, path}
	l := &g.lookups
	l.mu.Lock()
	cur := l.running[k]
	if cur == nil {
		f := &lookup{done: make(chan struct{})}
		l.running[k] = f
		l.mu.Unlock()
		// This round serves this call alone (later ones wait for the
		// next), so it runs under the call's own context.
		g.run(ctx, k, f)
		return f.tool, f.err
	}
	f, starter := l.next[k], false
	if f == nil {
		f, starter = &lookup{done: make(chan struct{})}, true
		l.next[k] = f
	}
	l.mu.Unlock()
	if starter {
		// Start the next round when the running one ends, even if this
		// call gives up meanwhile: others wait on it.
		go func() {
			<-cur.done
			l.mu.Lock()
			delete(l.next, k)
			l.running[k] = f
			l.mu.Unlock()
			shared, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
			defer cancel()
			g.run(shared, k, f)
		}()
	}
	select {
	case <-f.done:
		return f.tool, f.err
	case <-ctx.Done():
		return db.CallTool{}, context.Cause(ctx)
	}
}

// run performs f and publishes it.
func (g *Gateway) run(ctx context.Context, k lookupKey, f *lookup) {
	f.tool, f.err = g.opts.Store.CallTool(ctx, k.org, k.workspace, k.user, k.path)
	g.lookups.mu.Lock()
	if g.lookups.running[k] == f {
		delete(g.lookups.running, k)
	}
	g.lookups.mu.Unlock()
	close(f.done)
}
