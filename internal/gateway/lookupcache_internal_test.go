package gateway

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/db"
)

// listeningCache is a cache that believes it listens, with a clock the
// test moves; nothing announces to it but the test.
func listeningCache(size, maxBytes int, now *time.Time) *LookupCache {
	return &LookupCache{ttl: time.Minute, size: size, maxBytes: maxBytes, now: func() time.Time { return *now },
		listening: true, entries: map[lookupKey]cachedLookup{}, byOrg: map[int64]map[lookupKey]struct{}{}}
}

func tool(sourceID string) db.CallTool {
	var t db.CallTool
	t.SourceID, t.Path = sourceID, "items.get"
	return t
}

// stored reads a lookup as the gateway would: begin, read, put.
func stored(c *LookupCache, k lookupKey, t db.CallTool) {
	fetched, epoch := c.begin()
	c.put(k, t, fetched, epoch)
}

// TestLookupCacheEpoch: a lookup read before a drop is not kept after it,
// whichever organization the drop was for; one read after it is.
func TestLookupCacheEpoch(t *testing.T) {
	now := time.Now()
	c := listeningCache(10, 1<<20, &now)
	k := lookupKey{org: 1, workspace: 2, user: 3, path: "items.get"}
	for _, org := range []int64{1, 7, 0} {
		fetched, epoch := c.begin()
		c.drop(org) // announced while the read ran
		c.put(k, tool("src_old"), fetched, epoch)
		if _, ok := c.get(k); ok {
			t.Fatalf("a lookup read before the drop of organization %d was kept", org)
		}
	}
	stored(c, k, tool("src_new"))
	if got, ok := c.get(k); !ok || got.SourceID != "src_new" {
		t.Fatalf("a lookup read after the drop: %v %v", got.SourceID, ok)
	}
}

// TestLookupCacheDropsOneOrganization: an announcement drops its
// organization's lookups only; a lookup is served to its own caller only.
func TestLookupCacheDropsOneOrganization(t *testing.T) {
	now := time.Now()
	c := listeningCache(10, 1<<20, &now)
	a := lookupKey{org: 1, workspace: 10, user: 100, path: "items.get"}
	b := lookupKey{org: 2, workspace: 20, user: 200, path: "items.get"}
	stored(c, a, tool("src_a"))
	stored(c, b, tool("src_b"))
	for _, k := range []lookupKey{{2, 10, 100, "items.get"}, {1, 20, 100, "items.get"}, {1, 10, 200, "items.get"}, {1, 10, 100, "items.other"}} {
		if got, ok := c.get(k); ok {
			t.Fatalf("%+v was served %s", k, got.SourceID)
		}
	}
	c.drop(2)
	if _, ok := c.get(b); ok {
		t.Fatal("organization 2's lookup survived its drop")
	}
	if got, ok := c.get(a); !ok || got.SourceID != "src_a" {
		t.Fatal("organization 1's lookup went with organization 2's drop")
	}
	c.drop(0)
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 || len(c.byOrg) != 0 {
		t.Fatalf("after dropping everything: %+v, %d organizations", s, len(c.byOrg))
	}
}

// TestLookupCacheBounds: nothing older than the TTL is served, and the
// cache holds at most Size lookups and about MaxBytes.
func TestLookupCacheBounds(t *testing.T) {
	now := time.Now()
	c := listeningCache(3, 1<<20, &now)
	k := func(i int64) lookupKey { return lookupKey{org: i, workspace: 1, user: 1, path: "items.get"} }
	stored(c, k(1), tool("src_1"))
	now = now.Add(time.Minute)
	if _, ok := c.get(k(1)); ok {
		t.Fatal("served a lookup as old as the TTL")
	}
	for i := range int64(10) {
		stored(c, k(i), tool("src"))
	}
	if s := c.Stats(); s.Entries > 3 || len(c.byOrg) > 3 {
		t.Fatalf("size 3 holds %+v, %d organizations", s, len(c.byOrg))
	}

	plain := tool("src")
	one := lookupBytes(k(1), &plain)
	small := listeningCache(100, 2*one, &now)
	for i := range int64(10) {
		stored(small, k(i), tool("src"))
	}
	if s := small.Stats(); s.Bytes > 2*one || s.Entries != 2 {
		t.Fatalf("two lookups' bytes hold %+v", s)
	}
	big := tool("src")
	big.InputSchema = make([]byte, 4*one)
	stored(small, k(99), big)
	if _, ok := small.get(k(99)); ok {
		t.Fatal("kept a lookup larger than the whole cache")
	}
}

// TestLookupCacheNotListening: while it does not listen, the cache serves
// nothing and keeps nothing.
func TestLookupCacheNotListening(t *testing.T) {
	now := time.Now()
	c := listeningCache(10, 1<<20, &now)
	k := lookupKey{org: 1, workspace: 1, user: 1, path: "items.get"}
	stored(c, k, tool("src"))
	c.listening = false
	if _, ok := c.get(k); ok {
		t.Fatal("served from memory while not listening")
	}
	stored(c, lookupKey{org: 2, workspace: 1, user: 1, path: "items.get"}, tool("src"))
	if s := c.Stats(); s.Entries != 1 {
		t.Fatalf("kept a lookup while not listening: %+v", s)
	}
}
