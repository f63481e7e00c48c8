package search

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Defaults of [Fallback].
const (
	DefaultTimeout  = 2 * time.Second
	DefaultCooldown = 5 * time.Second
)

// Fallback searches Meilisearch and, while it is unavailable, PostgreSQL.
//
// A query goes to Primary with a short timeout. When Primary fails for
// want of a server (unreachable, timeout, 5xx, refused key, lost index: see
// [ErrUnavailable]), the query is answered by Secondary with
// Results.Degraded set, and Fallback remembers the failure for Cooldown: a
// circuit breaker, so a Meilisearch that is down does not add Timeout to
// every query. After Cooldown one query (or a [Fallback.Degraded] call)
// probes Primary again while the others keep using Secondary; success
// closes the breaker. State changes are logged once, not per query.
type Fallback struct {
	Primary   *Meili
	Secondary Index
	Log       *slog.Logger
	// Timeout bounds one Meilisearch query; 0 means DefaultTimeout.
	Timeout time.Duration
	// Cooldown is how long after a failure queries skip Meilisearch; 0
	// means DefaultCooldown.
	Cooldown time.Duration

	mu        sync.Mutex
	degraded  bool      // the last answer came from Secondary because Primary failed
	downUntil time.Time // queries skip Primary until then
	probing   bool      // one caller is trying Primary after the cooldown
}

// Search answers from Meilisearch, or from PostgreSQL with Degraded set
// while Meilisearch is unavailable. Errors of the query itself (a bad
// filter) and the caller's cancellation are returned, not hidden.
func (f *Fallback) Search(ctx context.Context, q Query) (Results, error) {
	if !f.tryPrimary() {
		return f.secondary(ctx, q)
	}
	pctx, cancel := context.WithTimeout(ctx, f.timeout())
	res, err := f.Primary.Search(pctx, q)
	cancel()
	switch {
	case err == nil:
		f.up()
		return res, nil
	case ctx.Err() != nil:
		f.release()
		return Results{}, ctx.Err()
	case errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded):
		f.down(err)
		return f.secondary(ctx, q)
	}
	f.release()
	return Results{}, err
}

// Degraded reports whether searches are currently answered by the
// fallback, for the console's banner. Once the cooldown has passed it
// probes Meilisearch in the background, so the banner clears even when
// nobody searches.
func (f *Fallback) Degraded() bool {
	f.mu.Lock()
	degraded := f.degraded
	f.mu.Unlock()
	if degraded && f.tryPrimary() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), f.timeout())
			defer cancel()
			if err := f.Primary.Health(ctx); err != nil {
				f.down(err)
				return
			}
			f.up()
		}()
	}
	return degraded
}

func (f *Fallback) secondary(ctx context.Context, q Query) (Results, error) {
	res, err := f.Secondary.Search(ctx, q)
	res.Degraded = true
	return res, err
}

// tryPrimary reports whether this caller should query Primary: yes while
// the breaker is closed, and for one caller at a time once the cooldown of
// an open breaker has passed.
func (f *Fallback) tryPrimary() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.degraded {
		return true
	}
	if f.probing || time.Now().Before(f.downUntil) {
		return false
	}
	f.probing = true
	return true
}

// release ends a probe that told nothing about Primary's health.
func (f *Fallback) release() {
	f.mu.Lock()
	f.probing = false
	f.mu.Unlock()
}

func (f *Fallback) up() {
	f.mu.Lock()
	was := f.degraded
	f.degraded, f.probing, f.downUntil = false, false, time.Time{}
	f.mu.Unlock()
	if was {
		f.logger().Info("meilisearch is back; search uses it again")
	}
}

func (f *Fallback) down(err error) {
	f.mu.Lock()
	was := f.degraded
	f.degraded, f.probing = true, false
	f.downUntil = time.Now().Add(f.cooldown())
	f.mu.Unlock()
	if !was {
		f.logger().Warn("meilisearch unavailable; search falls back to postgresql", "error", err.Error())
	}
}

func (f *Fallback) timeout() time.Duration {
	if f.Timeout > 0 {
		return f.Timeout
	}
	return DefaultTimeout
}

func (f *Fallback) cooldown() time.Duration {
	if f.Cooldown > 0 {
		return f.Cooldown
	}
	return DefaultCooldown
}

func (f *Fallback) logger() *slog.Logger {
	if f.Log != nil {
		return f.Log
	}
	return slog.Default()
}
