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
// per call. A [LookupCache] hit skips all this: its result may be older
// than the call, but no change to it has been announced since.
type lookups struct {
	mu      sync.Mutex
	running map[lookupKey]*lookup
	next    map[lookupKey]*lookup
}

// callTool is Store.CallTool served from the lookup cache when it can be
// ([Options.LookupCache]), else through the coalescing.
func (g *Gateway) callTool(ctx context.Context, c Caller, path string) (db.CallTool, error) {
	k := lookupKey{c.OrgID, c.WorkspaceID, c.UserID, path}
	if lc := g.opts.LookupCache; lc != nil {
		if t, ok := lc.get(k); ok {
			return t, nil
		}
	}
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

// run performs f, keeps what it found in the lookup cache, and publishes
// it. The cache's epoch is taken before the read, so a change announced
// while it runs keeps its result out of the cache.
func (g *Gateway) run(ctx context.Context, k lookupKey, f *lookup) {
	lc := g.opts.LookupCache
	var fetched time.Time
	var epoch uint64
	if lc != nil {
		fetched, epoch = lc.begin()
	}
	f.tool, f.err = g.opts.Store.CallTool(ctx, k.org, k.workspace, k.user, k.path)
	if lc != nil && f.err == nil {
		lc.put(k, f.tool, fetched, epoch)
	}
	g.lookups.mu.Lock()
	if g.lookups.running[k] == f {
		delete(g.lookups.running, k)
	}
	g.lookups.mu.Unlock()
	close(f.done)
}
