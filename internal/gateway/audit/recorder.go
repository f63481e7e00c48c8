package audit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolgate/toolgate/db"
)

// Store is where a [Recorder] writes its batches: *db.Store.
type Store interface {
	InsertToolCalls(ctx context.Context, calls []db.NewToolCall) (int64, error)
}

// Options tune a [Recorder]. Zero values take the defaults.
type Options struct {
	// BatchSize is the most rows one insert writes; default 500.
	BatchSize int
	// FlushInterval is the longest a row waits for its batch to fill;
	// default 200 ms.
	FlushInterval time.Duration
	// MaxQueued and MaxQueuedBytes bound what the recorder holds while the
	// database is slow or down; rows beyond either are dropped, counted and
	// logged. Defaults 100 000 rows and 256 MiB.
	MaxQueued      int
	MaxQueuedBytes int
	// WriteTimeout bounds one insert; default 15 s.
	WriteTimeout time.Duration
	// MinBackoff and MaxBackoff space the retries of a failed insert;
	// defaults 100 ms and 10 s.
	MinBackoff, MaxBackoff time.Duration
	Logger                 *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 200 * time.Millisecond
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = 100_000
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = 256 << 20
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 15 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(10*time.Second, o.MinBackoff)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Stats are a recorder's counters since it started.
type Stats struct {
	// Queued rows wait for, or are in, an insert; QueuedBytes is about the
	// memory they hold.
	Queued      int
	QueuedBytes int
	// Written rows are in the database.
	Written int64
	// Dropped rows were refused: beyond MaxQueued, recorded after Close,
	// still queued when Close gave up, or refused by the database in every
	// form the recorder tried.
	Dropped int64
	// Skipped rows were left out by the insert that succeeded: their
	// workspace had been deleted, or an earlier attempt whose success went
	// unacknowledged had written them already.
	Skipped int64
	// Batches counts successful inserts; Failures failed attempts.
	Batches  int64
	Failures int64
}

// Recorder writes audit rows in batches from one goroutine, so a call never
// waits on the database: [Recorder.Record] appends to a bounded queue under
// a mutex and returns. The writer inserts up to BatchSize rows at a time,
// at most FlushInterval after the first of them arrived: a full batch at
// once, a partial one when its first row has waited FlushInterval, so that
// rows arriving during an insert make one batch, not a stream of small
// ones (an insert's own cost to PostgreSQL is that of about ten rows).
// When an insert fails it keeps the rows and retries with exponential
// backoff, holding up to MaxQueued rows and MaxQueuedBytes.
// [Recorder.Close] writes what is left.
type Recorder struct {
	store Store
	opts  Options
	log   *slog.Logger

	mu    sync.Mutex
	queue []db.NewToolCall
	// since is no later than the arrival of the queue's first row.
	since    time.Time
	inflight int
	// held is the size of the queued and in-flight rows.
	held   int
	closed bool
	stats  Stats
	// logged is Dropped when last logged, at lastLogAt.
	logged    int64
	lastLogAt time.Time

	wake      chan struct{}
	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{}
	// ctx ends the writer's inserts and waits when Close gives up.
	ctx   context.Context
	abort context.CancelFunc
}

// New starts a recorder writing to store.
func New(store Store, o Options) *Recorder {
	o = o.withDefaults()
	ctx, abort := context.WithCancel(context.Background())
	r := &Recorder{store: store, opts: o, log: o.Logger, wake: make(chan struct{}, 1),
		closing: make(chan struct{}), done: make(chan struct{}), ctx: ctx, abort: abort}
	go r.run()
	return r
}

// Record queues one call's row and returns at once. Its Arguments and Error
// are capped here ([CapArguments], [CapError]); the gateway has already
// redacted them.
func (r *Recorder) Record(c Call) {
	row := toRow(c)
	size := rowSize(row)
	r.mu.Lock()
	if r.closed || len(r.queue)+r.inflight >= r.opts.MaxQueued || r.held+size > r.opts.MaxQueuedBytes {
		r.stats.Dropped++
		r.mu.Unlock()
		return
	}
	if len(r.queue) == 0 {
		r.since = time.Now()
	}
	r.queue = append(r.queue, row)
	r.held += size
	n := len(r.queue)
	r.mu.Unlock()
	if n == 1 || n >= r.opts.BatchSize {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// Stats returns the recorder's counters.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Queued, s.QueuedBytes = len(r.queue)+r.inflight, r.held
	return s
}

// Close stops taking rows and writes every queued one, retrying while ctx
// allows. If ctx ends first, the rows left are dropped, logged by count,
// and Close returns an error saying how many.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.closeOnce.Do(func() { close(r.closing) })
	select {
	case <-r.done:
		r.logDrops(true)
		return nil
	case <-ctx.Done():
	}
	r.abort()
	<-r.done
	r.mu.Lock()
	lost := len(r.queue)
	r.stats.Dropped += int64(lost)
	r.queue, r.held = nil, 0
	r.mu.Unlock()
	r.logDrops(true)
	if lost == 0 {
		return nil
	}
	r.log.Error("audit rows lost at shutdown", "rows", lost)
	return fmt.Errorf("audit: %d rows not written before shutdown: %w", lost, ctx.Err())
}

// run is the writer goroutine.
func (r *Recorder) run() {
	defer close(r.done)
	failures := 0
	for r.waitForBatch() {
		if r.flush() {
			failures = 0
		} else {
			failures++
			if !r.sleep(r.backoff(failures)) {
				return
			}
		}
		r.logDrops(false)
	}
}

// waitForBatch waits until a batch is due: BatchSize rows queued, the first
// queued FlushInterval ago, or Close. It returns false when there is
// nothing more to write.
func (r *Recorder) waitForBatch() bool {
	for r.queued() == 0 {
		select {
		case <-r.wake:
		case <-r.closing:
			// Closed before closing: no row can arrive any more.
			return r.queued() > 0
		case <-r.ctx.Done():
			return false
		}
	}
	n, since := r.queuedSince()
	if n >= r.opts.BatchSize {
		return true
	}
	timer := time.NewTimer(time.Until(since.Add(r.opts.FlushInterval)))
	defer timer.Stop()
	for {
		select {
		case <-r.wake:
			if r.queued() >= r.opts.BatchSize {
				return true
			}
		case <-timer.C:
			return true
		case <-r.closing:
			return true
		case <-r.ctx.Done():
			return false
		}
	}
}

func (r *Recorder) queued() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}

// queuedSince is how many rows are queued, and since when.
func (r *Recorder) queuedSince() (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue), r.since
}

// flush writes a batch, and more while a full one is queued (every row
// once Close was called), or until one fails; then it puts the batch's
// unwritten rows back in front and returns false.
func (r *Recorder) flush() bool {
	for {
		batch, since := r.take()
		if len(batch) == 0 {
			return true
		}
		rest, err := r.write(batch)
		r.mu.Lock()
		r.inflight = 0
		// rest is the end of batch: what went before is written or dropped.
		for _, row := range batch[:len(batch)-len(rest)] {
			r.held -= rowSize(row)
		}
		if err != nil {
			for i := range rest {
				rest[i].Retry = true // the insert may have committed them
			}
			r.queue = append(rest, r.queue...)
			r.since = since
			r.stats.Failures++
			queued, dropped := len(r.queue), r.stats.Dropped
			r.mu.Unlock()
			r.log.Warn("audit write failed; retrying", "error", safeError(err), "queued", queued, "dropped", dropped)
			return false
		}
		more := len(r.queue) >= r.opts.BatchSize || r.closed && len(r.queue) > 0
		r.mu.Unlock()
		if !more {
			return true
		}
	}
}

// take moves up to BatchSize rows from the queue into the writer's hands,
// with the time the first of them arrived by. Rows left in the queue keep
// that time: they are due no later than it says.
func (r *Recorder) take() ([]db.NewToolCall, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.queue), r.opts.BatchSize)
	batch := make([]db.NewToolCall, n)
	copy(batch, r.queue)
	stamp(batch)
	r.queue = r.queue[n:]
	if len(r.queue) == 0 {
		r.queue = nil
	}
	r.inflight = n
	return batch, r.since
}

// stamp gives each row of batch without a record key one, before its
// first insert. A row put back after a failed insert keeps its key and is
// marked Retry, so when that insert had in fact committed (its answer was
// lost: a timeout, a dropped connection), sending the rows again writes
// none of them twice; first attempts skip the check.
// The keys are UUIDv7s, time-ordered for the index: one draw per batch,
// with each row's place in the batch in the last four bytes.
func stamp(batch []db.NewToolCall) {
	var base uuid.UUID
	for i := range batch {
		if batch[i].RecordKey != ([16]byte{}) {
			continue
		}
		if base == uuid.Nil {
			var err error
			if base, err = uuid.NewV7(); err != nil {
				return // no keys: the rows are written all the same
			}
		}
		key := base
		binary.BigEndian.PutUint32(key[12:], uint32(i))
		batch[i].RecordKey = key
	}
}

// write inserts a batch in one statement. When the database refuses the
// rows themselves (bad data, a constraint), retrying them as they are
// cannot help, so it writes them one at a time in the forms [fallbacks]
// gives. On any other error it returns the rows not written.
func (r *Recorder) write(batch []db.NewToolCall) ([]db.NewToolCall, error) {
	n, err := r.insert(batch)
	if err == nil {
		r.count(len(batch), n)
		return nil, nil
	}
	if !db.RowError(err) {
		return batch, err
	}
	for i, row := range batch {
		written := false
		for _, form := range fallbacks(row) {
			n, err := r.insert([]db.NewToolCall{form})
			if err == nil {
				r.count(1, n)
				written = true
				break
			}
			if !db.RowError(err) {
				return batch[i:], err
			}
		}
		if !written {
			r.mu.Lock()
			r.stats.Dropped++
			r.mu.Unlock()
			r.log.Error("audit row refused by the database", "tool", row.Tool, "org_id", row.OrgID, "workspace_id", row.WorkspaceID)
		}
	}
	return nil, nil
}

// rowSize is about how much memory a queued row holds.
func rowSize(row db.NewToolCall) int {
	return 160 + len(row.Arguments) + len(row.Error) + len(row.Tool) + len(row.Via) + len(row.SourceID)
}

func (r *Recorder) insert(rows []db.NewToolCall) (int64, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.WriteTimeout)
	defer cancel()
	return r.store.InsertToolCalls(ctx, rows)
}

// count records a successful insert of rows, of which written reached the table.
func (r *Recorder) count(rows int, written int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Batches++
	r.stats.Written += written
	r.stats.Skipped += int64(rows) - written
}

func (r *Recorder) backoff(failures int) time.Duration {
	d := r.opts.MinBackoff
	for i := 1; i < failures && d < r.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.opts.MaxBackoff)
}

// sleep waits d, cut short by Close (which retries at once, then keeps
// backing off); it returns false when Close gave up.
func (r *Recorder) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.closing:
		// Close is waiting: wait no longer than the smallest step, so
		// shutdown retries promptly while still not spinning.
		select {
		case <-time.After(min(d, r.opts.MinBackoff)):
		case <-r.ctx.Done():
			return false
		}
	case <-r.ctx.Done():
		return false
	}
	return true
}

// logDrops logs how many rows were dropped since the last time, at most
// every ten seconds unless final. It never logs a row's content.
func (r *Recorder) logDrops(final bool) {
	r.mu.Lock()
	dropped, since := r.stats.Dropped, r.stats.Dropped-r.logged
	queued := len(r.queue) + r.inflight
	if since == 0 || !final && time.Since(r.lastLogAt) < 10*time.Second {
		r.mu.Unlock()
		return
	}
	r.logged = dropped
	r.lastLogAt = time.Now()
	r.mu.Unlock()
	r.log.Warn("audit rows dropped", "dropped", since, "dropped_total", dropped, "queued", queued, "max_queued", r.opts.MaxQueued, "max_queued_bytes", r.opts.MaxQueuedBytes)
}

// safeError describes a write error for the log without the rows' data:
// PostgreSQL's code and message (its detail may quote a value), or the
// driver's error unless it is about encoding a value.
func safeError(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code + ": " + pgErr.Message
	}
	msg := err.Error()
	if strings.Contains(msg, "encode") {
		return "the driver could not encode the rows"
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return strings.ToValidUTF8(msg, "")
}
