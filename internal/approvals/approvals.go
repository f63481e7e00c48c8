// Package approvals holds tool calls for a person's decision, durably.
//
// A held call becomes a row in PostgreSQL with its arguments sealed by the
// credentials' key ring, so the approved call later runs with exactly them,
// and a redacted copy for pages. Its status moves pending -> approved,
// denied or expired -> (approved only) executing -> executed, each step a
// conditional UPDATE, so a decision counts once and an approved call runs
// once whichever session, replica or retry asks.
//
// Every change is announced with NOTIFY on [db.ApprovalsChannel] in the
// transaction that makes it. Each [Service] keeps one LISTEN connection,
// which wakes the callers waiting on a request ([Service.Wait]) and feeds
// in-process subscribers ([Service.Subscribe]); a slow poll covers lost
// notifications and decisions made while this replica was down.
package approvals

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
)

// Status is where a request stands.
type Status string

// The statuses, in the order a request passes them.
const (
	Pending   Status = "pending"
	Approved  Status = "approved"
	Denied    Status = "denied"
	Expired   Status = "expired"
	Executing Status = "executing"
	Executed  Status = "executed"
)

// Statuses lists every status, in order.
var Statuses = []Status{Pending, Approved, Denied, Expired, Executing, Executed}

// Valid reports whether s is one of [Statuses].
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Final reports whether nothing more will happen to a request in s:
// denied, expired or executed.
func (s Status) Final() bool { return s == Denied || s == Expired || s == Executed }

// DefaultTTL is how long a request waits for a decision when its rule does
// not say.
const DefaultTTL = 10 * time.Minute

// StoppedMessage is the result text of a call whose executing replica
// stopped before it finished: toolgate cannot know whether the upstream
// ran it, and never runs it a second time.
const StoppedMessage = "the replica executing this call stopped; its outcome is unknown"

// Approval is a held call as people and the gateway see it, with the
// field names the JSON API uses. Arguments is the redacted copy; the intact
// arguments come only from [Service.Claim].
type Approval struct {
	ID          string `json:"id"`
	OrgID       int64  `json:"-"`
	WorkspaceID int64  `json:"workspace_id"`
	Tool        string `json:"tool"`
	SourceID    string `json:"source_id"`
	// Arguments is the redacted copy, for display.
	Arguments json.RawMessage `json:"arguments"`
	KeyID     *int64          `json:"key_id"`
	KeyName   string          `json:"key_name"`
	UserID    *int64          `json:"user_id"`
	UserEmail string          `json:"user_email"`
	UserName  string          `json:"user_name"`
	Via       string          `json:"via"`
	// PolicyID is the rule that held the call; nil when the tool's default did.
	PolicyID          *int64     `json:"policy_id"`
	Reason            string     `json:"reason"`
	AllowSelfApproval bool       `json:"allow_self_approval"`
	Status            Status     `json:"status"`
	RequestedAt       time.Time  `json:"requested_at"`
	ExpiresAt         time.Time  `json:"expires_at"`
	DecidedAt         *time.Time `json:"decided_at"`
	DecidedBy         *int64     `json:"decided_by"`
	DecidedByEmail    string     `json:"decided_by_email"`
	Comment           string     `json:"comment"`
	// ExecutedAt is when execution began while Executing, and when it
	// ended once Executed.
	ExecutedAt *time.Time `json:"executed_at"`
}

func fromRow(r db.Approval) Approval {
	return Approval{
		ID: r.ID, OrgID: r.OrgID, WorkspaceID: r.WorkspaceID, Tool: r.Tool, SourceID: r.SourceID,
		Arguments: r.ArgumentsRedacted, KeyID: r.KeyID, KeyName: r.KeyName, UserID: r.UserID,
		UserEmail: r.UserEmail, UserName: r.UserName, Via: r.Via, PolicyID: r.PolicyID, Reason: r.Reason,
		AllowSelfApproval: r.AllowSelfApproval, Status: Status(r.Status), RequestedAt: r.RequestedAt,
		ExpiresAt: r.ExpiresAt, DecidedAt: r.DecidedAt, DecidedBy: r.DecidedBy,
		DecidedByEmail: r.DecidedByEmail, Comment: r.Comment, ExecutedAt: r.ExecutedAt,
	}
}

// DecisionError refuses a decision. Code is "forbidden" (the person may not
// decide this request), "not_pending" (it was already decided or executed)
// or "expired"; Message says why in a sentence for the page.
type DecisionError struct {
	Code    string
	Message string
}

func (e *DecisionError) Error() string { return e.Message }

// HTTPStatus is the status an API answers the refusal with: 403 for
// forbidden, 409 otherwise.
func (e *DecisionError) HTTPStatus() int {
	if e.Code == "forbidden" {
		return http.StatusForbidden
	}
	return http.StatusConflict
}

// Options configure a [Service]. Store and Ring are required; zero
// durations take the defaults.
type Options struct {
	Store  *db.Store
	Ring   *secrets.Ring
	Logger *slog.Logger
	// PollInterval is how often a waiter re-reads its request even without
	// a notification (default 5 s).
	PollInterval time.Duration
	// TickInterval is how often Wait calls its tick (default 5 s).
	TickInterval time.Duration
	// SweepInterval is how often expired requests are marked and stuck
	// executions settled (default 30 s).
	SweepInterval time.Duration
	// ExecutingTimeout bounds how long a request may stay executing before
	// it is settled with [StoppedMessage] (default
	// [DefaultExecutingTimeout]).
	ExecutingTimeout time.Duration
}

// DefaultExecutingTimeout outlasts the longest execution a source may
// be allowed (an MCP source's connect and call timeouts, each up to
// [sources.MaxTimeoutSeconds]) by a margin, so a call still running is
// never settled as stopped: 25 minutes.
const DefaultExecutingTimeout = 2*sources.MaxTimeoutSeconds*time.Second + 5*time.Minute

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 5 * time.Second
	}
	if o.TickInterval <= 0 {
		o.TickInterval = 5 * time.Second
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = 30 * time.Second
	}
	if o.ExecutingTimeout <= 0 {
		o.ExecutingTimeout = DefaultExecutingTimeout
	}
}

// Event is one change of a request, delivered to subscribers. An Event
// with an empty ID means changes may have been missed (the notification
// connection was re-established): re-read what you show.
type Event struct {
	ID     string
	Status Status
}

// newID returns "apr_" and 26 random base32 characters (130 bits).
func newID() string { return "apr_" + strings.ToLower(rand.Text()) }

// associatedData binds a sealed value to its approval and its part
// ("arguments" or "result"), so a blob moved to another row or column does
// not open.
func associatedData(id, part string) []byte {
	return fmt.Appendf(nil, "toolgate/approval/v1 id=%s part=%s", id, part)
}

// Service runs approvals for one process: requests, decisions, waiting and
// the one execution. Create it with [New]; Close stops its background
// work.
type Service struct {
	store *db.Store
	ring  *secrets.Ring
	log   *slog.Logger
	opts  Options

	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	waiters map[string]map[chan struct{}]struct{}
	subs    map[workspaceKey]map[chan Event]struct{}
}

type workspaceKey struct{ org, ws int64 }

// New starts a Service: its LISTEN connection (trying the first connect
// before it returns, retrying with backoff after) and its periodic sweep.
func New(o Options) *Service {
	o.defaults()
	s := &Service{
		store: o.Store, ring: o.Ring, log: o.Logger, opts: o,
		stop:    make(chan struct{}),
		waiters: map[string]map[chan struct{}]struct{}{},
		subs:    map[workspaceKey]map[chan Event]struct{}{},
	}
	ready := make(chan struct{})
	s.wg.Add(2)
	go s.listen(ready)
	go s.sweepLoop()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
	}
	return s
}

// Close stops the listener and the sweep, and closes every subscriber's
// channel. Waiters already in Wait keep polling until they end.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.stop)
	for _, set := range s.subs {
		for ch := range set {
			close(ch)
		}
	}
	s.subs = map[workspaceKey]map[chan Event]struct{}{}
	s.mu.Unlock()
	s.wg.Wait()
}
