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
// changed it, and otherwise moves its expiry alone.
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

// Store keeps sessions in the sessions table: scs's pgxstore finds, saves
// and deletes them and sweeps the expired ones; [Store.touch] moves a
// session's expiry without its data.
type Store struct {
	*pgxstore.PostgresStore
	pool *pgxpool.Pool
}

// NewStore returns the store over pool, sweeping expired sessions every
// cleanup (never when it is 0; stop it with StopCleanup).
func NewStore(pool *pgxpool.Pool, cleanup time.Duration) *Store {
	return &Store{PostgresStore: pgxstore.NewWithCleanupInterval(pool, cleanup), pool: pool}
}

// touch sets a live session's expiry to expiry, unless it is already
// within slack of it: most requests then write nothing.
func (s *Store) touch(ctx context.Context, token string, expiry time.Time, slack time.Duration) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE sessions SET expiry = $2
		WHERE token = $1 AND current_timestamp < expiry AND expiry < $3`,
		token, expiry, expiry.Add(-slack))
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

// maxTouched bounds touched: past it, entries older than the slack go,
// and all of them if that is not enough.
const maxTouched = 10000

// New returns sessions in store that end lifetime after they began, or
// idle after their last request, whichever comes first.
func New(store *Store, lifetime, idle time.Duration) *Sessions {
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
// within it of the last one writes nothing.
func (s *Sessions) slack() time.Duration { return min(time.Minute, s.idle/10) }

// LoadAndSave is scs's middleware, which loads the session and saves it
// when the request changed it, plus the idle timeout: a request that finds
// a session moves its expiry before the handler runs.
func (s *Sessions) LoadAndSave(next http.Handler) http.Handler {
	return s.SessionManager.LoadAndSave(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if token := s.Token(ctx); token != "" && s.touchDue(token) {
			if err := s.store.touch(ctx, token, s.expiry(s.Deadline(ctx)), s.slack()); err != nil {
				s.ErrorFunc(w, r, err)
				return
			}
			s.noteTouched(token)
		}
		next.ServeHTTP(w, r)
	}))
}

// touchDue reports whether token's expiry may need moving: this process
// has not moved it within the slack.
func (s *Sessions) touchDue(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.touched[token]
	return !ok || time.Since(at) >= s.slack()
}

// noteTouched records that token's expiry was just moved (or found close
// enough).
func (s *Sessions) noteTouched(token string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.touched) >= maxTouched {
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

// Remember puts value under key unless it is there already, so a request
// that only reads the session does not save it (and undo a concurrent
// request's change).
func (s *Sessions) Remember(ctx context.Context, key, value string) {
	if s.GetString(ctx, key) != value {
		s.Put(ctx, key, value)
	}
}

// idleStore saves sessions with their expiry limited to the idle timeout.
type idleStore struct{ s *Sessions }

func (is idleStore) Find(token string) ([]byte, bool, error) { return is.s.store.Find(token) }
func (is idleStore) Delete(token string) error               { return is.s.store.Delete(token) }

func (is idleStore) Commit(token string, b []byte, deadline time.Time) error {
	return is.s.store.Commit(token, b, is.s.expiry(deadline))
}
