package auth_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/tenancy"
)

// clock is a settable time for a cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// replica is a key cache with a database connection of its own, as another
// toolgate process on the same database would have.
func (f *keyFixture) replica(t *testing.T, o auth.KeyCacheOptions) *auth.KeyCache {
	t.Helper()
	store, err := db.Open(context.Background(), f.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return startCache(t, &auth.Authenticator{Store: store}, o)
}

// startCache starts a cache and waits until it listens for changes: before
// that it serves nothing from memory.
func startCache(t *testing.T, a *auth.Authenticator, o auth.KeyCacheOptions) *auth.KeyCache {
	t.Helper()
	c := auth.NewKeyCache(a, o)
	t.Cleanup(c.Close)
	deadline := time.Now().Add(10 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the key cache does not listen for key changes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

// rename changes the owner's name behind the caches' backs: nothing
// announces it, so a cache that still shows the old name served the grant
// from memory.
func (f *keyFixture) rename(t *testing.T, u db.User, name string) {
	t.Helper()
	if _, err := f.store.DB().Exec(`UPDATE users SET name = $1 WHERE id = $2`, name, u.ID); err != nil {
		t.Fatal(err)
	}
}

func grantOf(t *testing.T, c *auth.KeyCache, plain string) db.APIKeyGrant {
	t.Helper()
	g, err := c.APIKey(context.Background(), plain)
	if err != nil {
		t.Fatalf("live key refused: %v", err)
	}
	return g
}

// eventually waits for an announced change to reach a cache. Announcements
// travel through PostgreSQL, so they arrive shortly after the change
// commits; the caches' TTL here is an hour, so only the announcement can
// explain the change.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within 10s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestKeyCacheRevocationAcrossReplicas: two replicas serve a key from
// memory; revoked through one, that one refuses it at once and the other
// as soon as the revocation's announcement arrives, long before its TTL.
func TestKeyCacheRevocationAcrossReplicas(t *testing.T) {
	f := newKeyFixture(t)
	ctx := context.Background()
	hour := auth.KeyCacheOptions{TTL: time.Hour}
	one := startCache(t, f.authn, hour)
	two := f.replica(t, hour)
	k, plain := f.key(t, f.member, auth.Member, tenancy.APIKeyInput{Name: "agent"})
	for _, c := range []*auth.KeyCache{one, two} {
		if g := grantOf(t, c, plain); g.Key.ID != k.ID || g.User.Name != "" {
			t.Fatalf("grant = %+v", g)
		}
	}
	f.rename(t, f.member, "Renamed")
	for i, c := range []*auth.KeyCache{one, two} {
		if g := grantOf(t, c, plain); g.User.Name != "" {
			t.Fatalf("replica %d read the database again: the grant was not cached", i+1)
		}
	}

	if err := f.ten.RevokeAPIKey(ctx, f.ws, f.member, auth.Member, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := one.APIKey(ctx, plain); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("the revoking replica still accepts the key: %v", err)
	}
	eventually(t, "the other replica refuses the revoked key", func() bool {
		_, err := two.APIKey(ctx, plain)
		return errors.Is(err, auth.ErrUnauthenticated)
	})
	// Refused keys are not cached: they stay refused.
	for i, c := range []*auth.KeyCache{one, two} {
		if _, err := c.APIKey(ctx, plain); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("replica %d accepts the revoked key again: %v", i+1, err)
		}
	}
}

// TestKeyCacheMembership: a role change and the end of a membership reach
// every replica by announcement; what nothing announces is served at most
// for the TTL.
func TestKeyCacheMembership(t *testing.T) {
	f := newKeyFixture(t)
	ctx := context.Background()
	clk := &clock{t: time.Now()}
	opts := auth.KeyCacheOptions{TTL: time.Hour, Now: clk.now}
	one := startCache(t, f.authn, opts)
	two := f.replica(t, opts)
	_, plain := f.key(t, f.member, auth.Member, tenancy.APIKeyInput{Name: "agent"})
	for _, c := range []*auth.KeyCache{one, two} {
		grantOf(t, c, plain)
	}

	if _, err := f.store.SetRole(ctx, f.org.ID, f.member.ID, "viewer", 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*auth.KeyCache{one, two} {
		eventually(t, "the demotion", func() bool { return grantOf(t, c, plain).Role == "viewer" })
	}

	// The TTL bounds what is not announced.
	f.rename(t, f.member, "Renamed")
	if g := grantOf(t, two, plain); g.User.Name != "" {
		t.Fatalf("not cached: %q", g.User.Name)
	}
	clk.advance(time.Hour)
	if g := grantOf(t, two, plain); g.User.Name != "Renamed" {
		t.Fatalf("served past its TTL: name %q", g.User.Name)
	}

	if err := f.store.RemoveMember(ctx, f.org.ID, f.member.ID, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*auth.KeyCache{one, two} {
		eventually(t, "the removal", func() bool {
			_, err := c.APIKey(ctx, plain)
			return errors.Is(err, auth.ErrUnauthenticated)
		})
	}
}

// TestKeyCacheExpiry: a cached grant stops at its key's expiry, whatever
// the TTL.
func TestKeyCacheExpiry(t *testing.T) {
	f := newKeyFixture(t)
	ctx := context.Background()
	k, plain := f.key(t, f.owner, auth.Owner, tenancy.APIKeyInput{Name: "short", ExpiresInDays: 1})
	clk := &clock{t: time.Now()}
	c := startCache(t, f.authn, auth.KeyCacheOptions{TTL: 72 * time.Hour, Now: clk.now})
	g := grantOf(t, c, plain)
	if g.Key.ID != k.ID || g.Key.ExpiresAt == nil {
		t.Fatalf("grant = %+v", g.Key)
	}
	f.rename(t, f.owner, "Renamed")
	clk.advance(23 * time.Hour)
	if g := grantOf(t, c, plain); g.User.Name == "Renamed" {
		t.Fatal("not cached")
	}
	clk.advance(time.Hour + time.Second)
	if _, err := c.APIKey(ctx, plain); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("an expired key is accepted from the cache: %v", err)
	}
	// Earlier expiry set in the database is announced.
	k2, plain2 := f.key(t, f.owner, auth.Owner, tenancy.APIKeyInput{Name: "cut short", ExpiresInDays: 30})
	grantOf(t, c, plain2)
	if _, err := f.store.DB().Exec(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, k2.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the earlier expiry", func() bool {
		_, err := c.APIKey(ctx, plain2)
		return errors.Is(err, auth.ErrUnauthenticated)
	})
}

// TestKeyCacheClosed: a closed cache serves nothing from memory.
func TestKeyCacheClosed(t *testing.T) {
	f := newKeyFixture(t)
	_, plain := f.key(t, f.owner, auth.Owner, tenancy.APIKeyInput{Name: "agent"})
	c := startCache(t, f.authn, auth.KeyCacheOptions{TTL: time.Hour})
	grantOf(t, c, plain)
	c.Close()
	if c.Ready() {
		t.Fatal("a closed cache says it listens")
	}
	f.rename(t, f.owner, "Renamed")
	if g := grantOf(t, c, plain); g.User.Name != "Renamed" {
		t.Fatalf("a closed cache served from memory: %q", g.User.Name)
	}
	if _, err := c.APIKey(context.Background(), "tgk_made-up"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("made-up key: %v", err)
	}
}

// TestKeyCacheListenerLost: announcements sent while the cache's listening
// connection is down are lost, so it forgets what it knew, serves from the
// database meanwhile, and caches again once it listens again.
func TestKeyCacheListenerLost(t *testing.T) {
	f := newKeyFixture(t)
	ctx := context.Background()
	_, plain := f.key(t, f.owner, auth.Owner, tenancy.APIKeyInput{Name: "agent"})
	c := startCache(t, f.authn, auth.KeyCacheOptions{TTL: time.Hour})
	grantOf(t, c, plain)
	f.rename(t, f.owner, "Second")
	if g := grantOf(t, c, plain); g.User.Name == "Second" {
		t.Fatal("not cached")
	}

	var ended int
	if err := f.store.DB().QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN `+db.APIKeyChannel+`'`).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("end the listening connection: %d ended, %v", ended, err)
	}
	eventually(t, "the grant read again after the listener was lost", func() bool {
		return grantOf(t, c, plain).User.Name == "Second"
	})
	eventually(t, "listening again", c.Ready)
	grantOf(t, c, plain)
	f.rename(t, f.owner, "Third")
	if g := grantOf(t, c, plain); g.User.Name != "Second" {
		t.Fatalf("not cached again after listening again: %q", g.User.Name)
	}
}
