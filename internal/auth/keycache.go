package auth

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/db"
)

// Key cache defaults.
const (
	// DefaultKeyCacheTTL bounds how long a replica serves a key's grant from
	// memory: the longest a change could go unseen if its announcement were
	// lost. Announced changes (revocation, membership) apply at once.
	DefaultKeyCacheTTL = 30 * time.Second
	// DefaultKeyCacheSize bounds the grants a replica keeps.
	DefaultKeyCacheSize = 10000
)

// The pause before listening again after the listening connection failed
// doubles from keyCacheRetry up to keyCacheMaxRetry while it keeps failing.
const (
	keyCacheRetry    = time.Second
	keyCacheMaxRetry = time.Minute
)

// KeyCacheOptions configure a [KeyCache].
type KeyCacheOptions struct {
	// TTL and Size default to DefaultKeyCacheTTL and DefaultKeyCacheSize.
	TTL    time.Duration
	Size   int
	Logger *slog.Logger
	// Now is the clock expiry and TTL are judged by; nil is time.Now.
	Now func() time.Time
}

// KeyCache keeps the grants of recently used API keys in this replica's
// memory, by the key's hash, so that most requests skip PostgreSQL. It
// stays true to the database:
//   - every change that can end or alter a grant is announced on
//     [db.APIKeyChannel] by the changing transaction, and the cache, which
//     LISTENs, drops the key when the change commits;
//   - a revocation through this process's Store drops the key before
//     RevokeAPIKey returns ([db.Store.OnAPIKeyRevoked]);
//   - while it is not listening (starting, or its connection failed), it
//     serves nothing from memory and, listening again, forgets everything;
//   - an expiry is checked on the cached grant at each use;
//   - no grant is older than the TTL.
type KeyCache struct {
	auth   *Authenticator
	ttl    time.Duration
	size   int
	log    *slog.Logger
	now    func() time.Time
	cancel context.CancelFunc
	done   chan struct{}
	remove func()

	mu sync.RWMutex
	// listening: announcements reach the cache, so it may serve from memory.
	listening bool
	// epoch counts the drops; a grant read from the database before a drop
	// is not stored after it.
	epoch  uint64
	byHash map[string]cachedGrant
	byKey  map[int64][]string
}

type cachedGrant struct {
	grant   db.APIKeyGrant
	fetched time.Time
}

// NewKeyCache starts a cache in front of a's key checks; Close stops it.
func NewKeyCache(a *Authenticator, o KeyCacheOptions) *KeyCache {
	if o.TTL <= 0 {
		o.TTL = DefaultKeyCacheTTL
	}
	if o.Size <= 0 {
		o.Size = DefaultKeyCacheSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &KeyCache{
		auth: a, ttl: o.TTL, size: o.Size, log: o.Logger, now: o.Now, cancel: cancel, done: make(chan struct{}),
		byHash: map[string]cachedGrant{}, byKey: map[int64][]string{},
	}
	c.remove = a.Store.OnAPIKeyRevoked(c.drop)
	go c.listen(ctx)
	return c
}

// Close stops listening and forgets every grant.
func (c *KeyCache) Close() {
	c.cancel()
	<-c.done
	c.remove()
	c.mu.Lock()
	c.listening = false
	c.forgetAll()
	c.mu.Unlock()
}

// Ready reports whether the cache listens for changes and so serves grants
// from memory.
func (c *KeyCache) Ready() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.listening
}

// APIKey is [Authenticator.APIKey] served from memory when it can be.
func (c *KeyCache) APIKey(ctx context.Context, bearer string) (db.APIKeyGrant, error) {
	if !strings.HasPrefix(bearer, APIKeyPrefix) {
		return db.APIKeyGrant{}, ErrUnauthenticated
	}
	hash := string(HashSecret(bearer))
	now := c.now()
	c.mu.RLock()
	e, hit := c.byHash[hash]
	listening, epoch := c.listening, c.epoch
	c.mu.RUnlock()
	if hit && listening && now.Sub(e.fetched) < c.ttl {
		if exp := e.grant.Key.ExpiresAt; exp != nil && !now.Before(*exp) {
			c.drop(e.grant.Key.ID)
			return db.APIKeyGrant{}, ErrUnauthenticated
		}
		return e.grant, nil
	}
	g, err := c.auth.APIKey(ctx, bearer)
	if err != nil || !listening {
		return g, err
	}
	c.store(hash, g, now, epoch)
	return g, nil
}

// store keeps a grant read from the database, unless a drop happened
// since the read began (the grant may predate it).
func (c *KeyCache) store(hash string, g db.APIKeyGrant, fetched time.Time, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.listening || c.epoch != epoch {
		return
	}
	if _, ok := c.byHash[hash]; !ok {
		if len(c.byHash) >= c.size {
			c.evict(fetched)
		}
		c.byKey[g.Key.ID] = append(c.byKey[g.Key.ID], hash)
	}
	c.byHash[hash] = cachedGrant{grant: g, fetched: fetched}
}

// evict makes room: it drops the stale grants, or else some grant.
func (c *KeyCache) evict(now time.Time) {
	for h, e := range c.byHash {
		if now.Sub(e.fetched) >= c.ttl {
			c.forget(h, e.grant.Key.ID)
		}
	}
	for h, e := range c.byHash {
		if len(c.byHash) < c.size {
			return
		}
		c.forget(h, e.grant.Key.ID)
	}
}

func (c *KeyCache) forget(hash string, keyID int64) {
	delete(c.byHash, hash)
	hs := c.byKey[keyID]
	for i, h := range hs {
		if h == hash {
			hs = append(hs[:i], hs[i+1:]...)
			break
		}
	}
	if len(hs) == 0 {
		delete(c.byKey, keyID)
	} else {
		c.byKey[keyID] = hs
	}
}

func (c *KeyCache) forgetAll() {
	c.epoch++
	clear(c.byHash)
	clear(c.byKey)
}

// drop forgets one key's grant; keyID 0 forgets every grant.
func (c *KeyCache) drop(keyID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if keyID == 0 {
		c.forgetAll()
		return
	}
	c.epoch++
	for _, h := range c.byKey[keyID] {
		delete(c.byHash, h)
	}
	delete(c.byKey, keyID)
}

// listen keeps a LISTEN connection open until the cache closes; the cache
// serves from memory only while it is open.
func (c *KeyCache) listen(ctx context.Context) {
	defer close(c.done)
	retry := keyCacheRetry
	for {
		err := c.auth.Store.ListenAPIKeyChanges(ctx, func() {
			c.mu.Lock()
			c.forgetAll()
			c.listening = true
			c.mu.Unlock()
			retry = keyCacheRetry
		}, c.drop)
		c.mu.Lock()
		c.listening = false
		c.forgetAll()
		c.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("api key cache: not listening for key changes; checking every key in the database until it listens again", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, keyCacheMaxRetry)
	}
}
