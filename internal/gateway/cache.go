package gateway

import (
	"sync"
	"sync/atomic"
)

// cacheLimit bounds each of the gateway's caches; a full cache starts over
// (entries are cheap to rebuild, and a bound keeps a long-lived server's
// memory flat however many tools and credentials pass through it).
const cacheLimit = 4096

// cache is a bounded, read-mostly map shared by concurrent calls.
type cache[K comparable, V any] struct {
	m    sync.Map
	size atomic.Int64
}

func (c *cache[K, V]) get(k K) (V, bool) {
	v, ok := c.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

func (c *cache[K, V]) put(k K, v V) {
	if _, loaded := c.m.Swap(k, v); loaded {
		return
	}
	if c.size.Add(1) > cacheLimit {
		c.m.Clear()
		c.size.Store(0)
	}
}

func (c *cache[K, V]) delete(k K) {
	if _, loaded := c.m.LoadAndDelete(k); loaded {
		c.size.Add(-1)
	}
}
