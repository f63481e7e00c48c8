package approvals

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/db"
)

// Backoff bounds between attempts to re-establish the LISTEN connection.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
)

// listen keeps one connection LISTENing on [db.ApprovalsChannel] until
// Close, reconnecting with backoff. ready is closed after the first
// attempt, successful or not.
func (s *Service) listen(ready chan struct{}) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	markReady := sync.OnceFunc(func() { close(ready) })
	backoff := minBackoff
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			markReady()
			backoff = minBackoff
			// Anything may have changed while no connection listened.
			s.wakeAll()
		})
		markReady()
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("approvals listener lost its connection", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// listenOnce connects, LISTENs, calls connected, then dispatches
// notifications until the connection fails or ctx ends.
func (s *Service) listenOnce(ctx context.Context, connected func()) error {
	cfg := s.store.Pool().Config().ConnConfig.Copy()
	connectCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(connectCtx, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+db.ApprovalsChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.dispatch(n.Payload)
	}
}

// notice is a parsed notification payload.
type notice struct {
	org, ws int64
	id      string
	status  Status
}

// parseNotice reads "<org_id>:<workspace_id>:<id>:<status>".
func parseNotice(payload string) (notice, bool) {
	parts := strings.SplitN(payload, ":", 4)
	if len(parts) != 4 {
		return notice{}, false
	}
	org, err1 := strconv.ParseInt(parts[0], 10, 64)
	ws, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || parts[2] == "" || !Status(parts[3]).Valid() {
		return notice{}, false
	}
	return notice{org: org, ws: ws, id: parts[2], status: Status(parts[3])}, true
}

// dispatch wakes the waiters of one request and tells its workspace's
// subscribers.
func (s *Service) dispatch(payload string) {
	n, ok := parseNotice(payload)
	if !ok {
		s.log.Warn("approvals listener ignored a malformed notification", "payload", payload)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.waiters[n.id] {
		wake(ch)
	}
	for ch := range s.subs[workspaceKey{n.org, n.ws}] {
		send(ch, Event{ID: n.id, Status: n.status})
	}
}

// wakeAll wakes every waiter and tells every subscriber to re-read.
func (s *Service) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, set := range s.waiters {
		for ch := range set {
			wake(ch)
		}
	}
	for _, set := range s.subs {
		for ch := range set {
			send(ch, Event{})
		}
	}
}

// wake signals a waiter without blocking; one pending signal is enough.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// send delivers an event unless the subscriber's buffer is full.
func send(ch chan Event, e Event) {
	select {
	case ch <- e:
	default:
	}
}

// watch registers a waiter for one request; done unregisters it.
func (s *Service) watch(id string) (ch chan struct{}, done func()) {
	ch = make(chan struct{}, 1)
	s.mu.Lock()
	set := s.waiters[id]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		s.waiters[id] = set
	}
	set[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.waiters[id], ch)
		if len(s.waiters[id]) == 0 {
			delete(s.waiters, id)
		}
	}
}

// subscriberBuffer is how many events a slow subscriber may fall behind
// before it misses some.
const subscriberBuffer = 32

// Subscribe delivers every change of a workspace's requests (requested,
// decided, expired, executing, executed), made by any replica, until cancel
// or Close; Close closes the channel. The channel is buffered: a slow
// subscriber misses events and never blocks others, so treat an event as
// "re-read", not as a complete log.
func (s *Service) Subscribe(orgID, wsID int64) (events <-chan Event, cancel func()) {
	ch := make(chan Event, subscriberBuffer)
	key := workspaceKey{orgID, wsID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(ch)
		return ch, func() {}
	}
	set := s.subs[key]
	if set == nil {
		set = map[chan Event]struct{}{}
		s.subs[key] = set
	}
	set[ch] = struct{}{}
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.subs[key][ch]; !ok {
			return // Close already closed it
		}
		delete(s.subs[key], ch)
		if len(s.subs[key]) == 0 {
			delete(s.subs, key)
		}
		close(ch)
	}
}
