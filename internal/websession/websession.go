// Package websession keeps the console's sessions: scs over PostgreSQL,
// with the idle timeout kept by moving a session's expiry in the table
// rather than by saving the whole session on every request.
//
// scs's own idle timeout marks every loaded session as changed, so every
// request writes back the values it loaded. Two requests of one browser at
// once (an htmx fragment refreshing while a form posts) then undo each
// other: the one that ends last writes the values it read before the
// other's change, and a flash, or the one-time display of a new API key,
// is lost or comes back. Here a request writes the session only when it
// changed it, and otherwise moves its expiry alone; and a save never
// brings back a session that ended (signed out, or renewed) while the
// request that saves it was running.
package websession

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5/pgxpool"
)

// touchTimeout bounds moving a session's expiry. The request's own
// cancellation does not stop it: a browser that goes away mid-request is
// not a database failure.
const touchTimeout = 5 * time.Second

// Store keeps sessions in the sessions table. scs's pgxstore finds them
// and sweeps the expired ones; saving and deleting are its own, so that an
// ended session stays ended (see [Store.Delete]).
type Store struct {
	*pgxstore.PostgresStore
	pool *pgxpool.Pool
}

// NewStore returns the store over pool, sweeping expired sessions every
// cleanup (never when it is 0; stop it with StopCleanup).
func NewStore(pool *pgxpool.Pool, cleanup time.Duration) *Store {
	return &Store{PostgresStore: pgxstore.NewWithCleanupInterval(pool, cleanup), pool: pool}
}

// Commit saves a session. A session that ended is not saved again: a
// request that loaded it before another request signed out (or renewed
// its token) must not bring it back when it ends.
func (s *Store) Commit(token string, b []byte, expiry time.Time) error {
	_, err := s.pool.Exec(context.Background(), `
		INSERT INTO sessions (token, data, expiry) VALUES ($1, $2, $3)
		ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry
		WHERE sessions.expiry > current_timestamp`, token, b, expiry)
	return err
}

// Delete ends a session. Its row stays, emptied and expired, until the
// sweep removes it, so that a late save of the same token finds it ended
// (see [Store.Commit]).
func (s *Store) Delete(token string) error {
	_, err := s.pool.Exec(context.Background(), `
		UPDATE sessions SET data = '', expiry = '-infinity' WHERE token = $1`, token)
	return err
}

// touch sets a live session's expiry.
func (s *Store) touch(ctx context.Context, token string, expiry time.Time) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE sessions SET expiry = $2 WHERE token = $1 AND current_timestamp < expiry`, token, expiry)
	return err
}

// Sessions is the session manager: scs's, with [Sessions.LoadAndSave]
// keeping the idle timeout.
type Sessions struct {
	*scs.SessionManager
	store *Store
	idle  time.Duration

	mu sync.Mutex
	// touched holds when this process last moved a session's expiry, so a
	// request within the slack of it skips the round trip to PostgreSQL.
	touched map[string]time.Time
}

// maxTouched bounds touched: a new entry past it first removes those
// older than the slack, and all of them if that is not enough.
const maxTouched = 10000

// New returns sessions in store that end lifetime after they began, or
// idle after their last request, whichever comes first (an idle of 0 is
// lifetime).
func New(store *Store, lifetime, idle time.Duration) *Sessions {
	if idle <= 0 {
		idle = lifetime
	}
	sm := scs.New()
	sm.Lifetime = lifetime
	// Left at 0: scs would then save every session on every request (see
	// the package comment). The saved expiry is limited to idle below.
	sm.IdleTimeout = 0
	s := &Sessions{SessionManager: sm, store: store, idle: idle, touched: map[string]time.Time{}}
	sm.Store = idleStore{s}
	return s
}

// expiry is when a session with the absolute deadline ends if nothing
// uses it from now on.
func (s *Sessions) expiry(deadline time.Time) time.Time {
	if idle := time.Now().Add(s.idle); idle.Before(deadline) {
		return idle
	}
	return deadline
}

// slack is how far a session's saved expiry may lag behind: a request
// within it of the last move writes nothing.
func (s *Sessions) slack() time.Duration { return min(time.Minute, s.idle/10) }

// LoadAndSave is scs's middleware, which loads the session and saves it
// when the request changed it, plus the idle timeout: a request that finds
// a session moves its expiry before the handler runs, unless this process
// moved it within the slack.
func (s *Sessions) LoadAndSave(next http.Handler) http.Handler {
	return s.SessionManager.LoadAndSave(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if token := s.Token(ctx); token != "" && s.touchDue(token) {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), touchTimeout)
			err := s.store.touch(tctx, token, s.expiry(s.Deadline(ctx)))
			cancel()
			if err != nil {
				s.ErrorFunc(w, r, err)
				return
			}
			s.noteTouched(token)
		}
		next.ServeHTTP(w, r)
	}))
}

// KeepDeadline renews the session's token, as after a change of privilege,
// and keeps its absolute deadline: scs's RenewToken starts a new lifetime,
// which would let whoever holds a session extend it for ever.
func (s *Sessions) KeepDeadline(ctx context.Context) error {
	deadline := s.Deadline(ctx)
	if err := s.RenewToken(ctx); err != nil {
		return err
	}
	s.SetDeadline(ctx, deadline)
	return nil
}

// touchDue reports whether token's expiry may need moving: this process
// has not moved it within the slack.
func (s *Sessions) touchDue(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.touched[token]
	return !ok || time.Since(at) >= s.slack()
}

// noteTouched records that token's expiry was just moved.
func (s *Sessions) noteTouched(token string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.touched[token]; !ok && len(s.touched) >= maxTouched {
		for t, at := range s.touched {
			if now.Sub(at) >= s.slack() {
				delete(s.touched, t)
			}
		}
		if len(s.touched) >= maxTouched {
			clear(s.touched)
		}
	}
	s.touched[token] = now
}

// forget drops what this process remembers of an ended session's token.
func (s *Sessions) forget(token string) {
	s.mu.Lock()
	delete(s.touched, token)
	s.mu.Unlock()
}

// Remember puts value under key unless it is there already, so a request
// that only reads the session does not save it.
func (s *Sessions) Remember(ctx context.Context, key, value string) {
	if s.GetString(ctx, key) != value {
		s.Put(ctx, key, value)
	}
}

// idleStore saves sessions with their expiry limited to the idle timeout.
type idleStore struct{ s *Sessions }

func (is idleStore) Find(token string) ([]byte, bool, error) { return is.s.store.Find(token) }

func (is idleStore) Delete(token string) error {
	is.s.forget(token)
	return is.s.store.Delete(token)
}

// Commit saves with the expiry limited to idle from now; the save moved
// the expiry, so the next request within the slack need not.
func (is idleStore) Commit(token string, b []byte, deadline time.Time) error {
	if err := is.s.store.Commit(token, b, is.s.expiry(deadline)); err != nil {
		return err
	}
	is.s.noteTouched(token)
	return nil
}
