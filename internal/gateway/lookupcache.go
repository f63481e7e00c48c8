package gateway

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/db"
)

// Lookup cache defaults.
const (
	// DefaultLookupCacheTTL bounds how long a replica serves a lookup from
	// memory: the longest a change could go unseen if its announcement
	// were lost. Announced changes apply at once.
	DefaultLookupCacheTTL = 30 * time.Second
	// DefaultLookupCacheSize bounds the lookups a replica keeps.
	DefaultLookupCacheSize = 10000
	// DefaultLookupCacheBytes bounds about how much memory they hold (an
	// input schema can be large).
	DefaultLookupCacheBytes = 64 << 20
)

// The pause before listening again after the listening connection failed
// doubles from lookupCacheRetry up to lookupCacheMaxRetry while it keeps
// failing.
const (
	lookupCacheRetry    = time.Second
	lookupCacheMaxRetry = time.Minute
)

// LookupCacheOptions configure a [LookupCache]. Zero values take the
// defaults.
type LookupCacheOptions struct {
	TTL      time.Duration
	Size     int
	MaxBytes int
	Logger   *slog.Logger
	// Now is the clock the TTL is judged by; nil is time.Now.
	Now func() time.Time
}

// LookupCacheStats are a cache's counters since it started.
type LookupCacheStats struct {
	// Hits were served from memory, Misses read the database.
	Hits, Misses int64
	// Entries and Bytes are what it holds now.
	Entries, Bytes int
}

// LookupCache keeps the lookups of recent calls ([db.Store.CallTool]: the
// tool, its source, the caller's credential and the policy versions) in
// this replica's memory, by organization, workspace, user and path, so
// that most calls skip PostgreSQL. It stays true to the database:
//   - every change that can alter a lookup is announced on
//     [db.GatewayChannel] by the changing transaction with its
//     organization's id, and the cache, which LISTENs, drops that
//     organization's lookups when the change commits (every replica's
//     cache alike);
//   - a write through this process's Store drops the organization's
//     lookups before the writing method returns
//     ([db.Store.OnGatewayChange]), so a replica reads its own writes
//     without waiting for the announcement;
//   - a lookup read from the database before a drop is not stored after
//     it (an epoch counts the drops);
//   - while it is not listening (starting, or its connection failed), it
//     serves nothing from memory and, listening again, forgets everything;
//   - no lookup is older than the TTL.
//
// Only found tools are kept: an unknown path reads the database each time.
type LookupCache struct {
	store    *db.Store
	ttl      time.Duration
	size     int
	maxBytes int
	log      *slog.Logger
	now      func() time.Time
	cancel   context.CancelFunc
	done     chan struct{}
	// remove unregisters the drop this process's own writes run.
	remove func()

	hits, misses atomic.Int64

	mu sync.RWMutex
	// listening: announcements reach the cache, so it may serve from memory.
	listening bool
	epoch     uint64
	entries   map[lookupKey]cachedLookup
	byOrg     map[int64]map[lookupKey]struct{}
	bytes     int
}

type cachedLookup struct {
	tool    db.CallTool
	fetched time.Time
	bytes   int
}

// NewLookupCache starts a cache over store's lookups; Close stops it. A
// gateway uses it through [Options.LookupCache].
func NewLookupCache(store *db.Store, o LookupCacheOptions) *LookupCache {
	if o.TTL <= 0 {
		o.TTL = DefaultLookupCacheTTL
	}
	if o.Size <= 0 {
		o.Size = DefaultLookupCacheSize
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultLookupCacheBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &LookupCache{
		store: store, ttl: o.TTL, size: o.Size, maxBytes: o.MaxBytes, log: o.Logger, now: o.Now,
		cancel: cancel, done: make(chan struct{}),
		entries: map[lookupKey]cachedLookup{}, byOrg: map[int64]map[lookupKey]struct{}{},
	}
	c.remove = store.OnGatewayChange(c.drop)
	go c.listen(ctx)
	return c
}

// Close stops listening and forgets every lookup.
func (c *LookupCache) Close() {
	c.remove()
	c.cancel()
	<-c.done
	c.mu.Lock()
	c.listening = false
	c.forgetAll()
	c.mu.Unlock()
}

// Ready reports whether the cache listens for changes and so serves
// lookups from memory.
func (c *LookupCache) Ready() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.listening
}

// Stats returns the cache's counters.
func (c *LookupCache) Stats() LookupCacheStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return LookupCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: len(c.entries), Bytes: c.bytes}
}

// get serves a lookup from memory, if it can.
func (c *LookupCache) get(k lookupKey) (db.CallTool, bool) {
	now := c.now()
	c.mu.RLock()
	e, hit := c.entries[k]
	hit = hit && c.listening && now.Sub(e.fetched) < c.ttl
	c.mu.RUnlock()
	if !hit {
		c.misses.Add(1)
		return db.CallTool{}, false
	}
	c.hits.Add(1)
	return e.tool, true
}

// begin is taken just before reading a lookup from the database: the time
// the read counts from, and the epoch that put checks.
func (c *LookupCache) begin() (time.Time, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.now(), c.epoch
}

// put keeps a lookup read from the database since begin returned fetched
// and epoch, unless a drop happened since (the lookup may predate the
// change) or the cache does not listen.
func (c *LookupCache) put(k lookupKey, t db.CallTool, fetched time.Time, epoch uint64) {
	n := lookupBytes(k, &t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.listening || c.epoch != epoch || n > c.maxBytes {
		return
	}
	if old, ok := c.entries[k]; ok {
		c.bytes -= old.bytes
	} else {
		c.makeRoom(fetched, n)
		org := c.byOrg[k.org]
		if org == nil {
			org = map[lookupKey]struct{}{}
			c.byOrg[k.org] = org
		}
		org[k] = struct{}{}
	}
	c.entries[k] = cachedLookup{tool: t, fetched: fetched, bytes: n}
	c.bytes += n
}

// makeRoom drops the stale lookups, then others, until one more of n bytes
// fits.
func (c *LookupCache) makeRoom(now time.Time, n int) {
	full := func() bool { return len(c.entries) >= c.size || c.bytes+n > c.maxBytes }
	if !full() {
		return
	}
	for k, e := range c.entries {
		if now.Sub(e.fetched) >= c.ttl {
			c.forget(k)
		}
	}
	for k := range c.entries {
		if !full() {
			return
		}
		c.forget(k)
	}
}

func (c *LookupCache) forget(k lookupKey) {
	e, ok := c.entries[k]
	if !ok {
		return
	}
	c.bytes -= e.bytes
	delete(c.entries, k)
	org := c.byOrg[k.org]
	delete(org, k)
	if len(org) == 0 {
		delete(c.byOrg, k.org)
	}
}

func (c *LookupCache) forgetAll() {
	c.epoch++
	clear(c.entries)
	clear(c.byOrg)
	c.bytes = 0
}

// drop forgets an organization's lookups; orgID 0 forgets every lookup.
func (c *LookupCache) drop(orgID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if orgID == 0 {
		c.forgetAll()
		return
	}
	c.epoch++
	for k := range c.byOrg[orgID] {
		c.forget(k)
	}
}

// listen keeps a LISTEN connection open until the cache closes; the cache
// serves from memory only while it is open.
func (c *LookupCache) listen(ctx context.Context) {
	defer close(c.done)
	retry := lookupCacheRetry
	for {
		err := c.store.ListenGatewayChanges(ctx, func() {
			c.mu.Lock()
			c.forgetAll()
			c.listening = true
			c.mu.Unlock()
			retry = lookupCacheRetry
		}, c.drop)
		c.mu.Lock()
		c.listening = false
		c.forgetAll()
		c.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("gateway lookup cache: not listening for changes; looking up every call in the database until it listens again", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, lookupCacheMaxRetry)
	}
}

// lookupBytes is about how much memory a kept lookup holds.
func lookupBytes(k lookupKey, t *db.CallTool) int {
	n := 512 + len(k.path)
	for _, s := range []string{t.SourceID, t.Path, t.Name, t.Title, t.Description, t.DefaultApproval, t.DocHash,
		t.SourceName, t.SourceSlug, t.SourceType, t.SourceScope, t.SourceBaseURL} {
		n += len(s)
	}
	for _, b := range [][]byte{t.InputSchema, t.OutputSchema, t.Annotations, t.Ref, t.SourceConfig,
		t.CredentialAuth, t.CredentialNonce, t.CredentialSealed} {
		n += len(b)
	}
	for _, s := range t.Aliases {
		n += 16 + len(s)
	}
	for _, s := range t.Params {
		n += 16 + len(s)
	}
	return n
}
