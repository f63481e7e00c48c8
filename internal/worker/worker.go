// Package worker runs toolgate's background jobs on River, PostgreSQL's
// job queue: refreshing sources, removing deleted sources from the search
// index, the periodic refresh of URL-based sources and the reconcile that
// repairs the index from PostgreSQL. Any number of workers may run; River
// hands each job to one of them and retries jobs whose worker died.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/registry"
)

// pending are the states in which a job counts as waiting: a refresh
// enqueued while one waits is the same refresh. Completed jobs are left out
// so the next change enqueues a new refresh at once.
var pending = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// RefreshArgs refreshes one source.
type RefreshArgs struct {
	OrgID    int64  `json:"org_id"`
	SourceID string `json:"source_id"`
}

// Kind names the job.
func (RefreshArgs) Kind() string { return "refresh_source" }

// InsertOpts makes a refresh unique while one is pending.
func (RefreshArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pending}}
}

// UnindexArgs removes a deleted source's documents from the search index.
type UnindexArgs struct {
	OrgID    int64  `json:"org_id"`
	SourceID string `json:"source_id"`
}

// Kind names the job.
func (UnindexArgs) Kind() string { return "unindex_source" }

// InsertOpts retries until Meilisearch is back.
func (UnindexArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pending}}
}

// ReconcileArgs repairs the search index from PostgreSQL.
type ReconcileArgs struct{}

// Kind names the job.
func (ReconcileArgs) Kind() string { return "reconcile_index" }

// InsertOpts keeps one reconcile pending at a time.
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pending}}
}

// RefreshDueArgs enqueues refreshes of sources fetched from URLs or remote
// servers that were not refreshed within the refresh interval.
type RefreshDueArgs struct{}

// Kind names the job.
func (RefreshDueArgs) Kind() string { return "refresh_due_sources" }

// InsertOpts keeps one scan pending at a time.
func (RefreshDueArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pending}}
}

// Options configure a worker.
type Options struct {
	// Concurrency is how many jobs run at once in this process.
	Concurrency int
	// JobTimeout bounds one job; a job whose worker died is retried after
	// twice this long.
	JobTimeout time.Duration
	// RefreshInterval is how often URL-based sources are refreshed.
	RefreshInterval time.Duration
	// ReconcileInterval is how often the index is compared with PostgreSQL.
	ReconcileInterval time.Duration
}

// Queue enqueues jobs; with workers it also runs them.
type Queue struct {
	client *river.Client[pgx.Tx]
	store  *db.Store
}

// NewQueue builds a client that only inserts jobs (serve --worker=false).
func NewQueue(store *db.Store) (*Queue, error) {
	client, err := river.NewClient(riverpgxv5.New(store.Pool()), &river.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return &Queue{client: client, store: store}, nil
}

// New builds a client that runs jobs with the refresher.
func New(store *db.Store, r *registry.Refresher, log *slog.Logger, opts Options) (*Queue, error) {
	if opts.Concurrency == 0 {
		opts.Concurrency = 4
	}
	if opts.JobTimeout == 0 {
		opts.JobTimeout = 5 * time.Minute
	}
	if opts.ReconcileInterval == 0 {
		opts.ReconcileInterval = time.Minute
	}
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = 6 * time.Hour
	}
	q := &Queue{store: store}
	workers := river.NewWorkers()
	river.AddWorker(workers, &refreshWorker{r: r, store: store, log: log, timeout: opts.JobTimeout})
	river.AddWorker(workers, &unindexWorker{r: r})
	river.AddWorker(workers, &reconcileWorker{r: r, store: store, log: log})
	river.AddWorker(workers, &refreshDueWorker{q: q, store: store, interval: opts.RefreshInterval, log: log})
	client, err := river.NewClient(riverpgxv5.New(store.Pool()), &river.Config{
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.Concurrency}},
		Workers:              workers,
		JobTimeout:           opts.JobTimeout,
		RescueStuckJobsAfter: 2 * opts.JobTimeout,
		Logger:               log.With("component", "river"),
		PeriodicJobs: []*river.PeriodicJob{
			river.NewPeriodicJob(river.PeriodicInterval(opts.ReconcileInterval),
				func() (river.JobArgs, *river.InsertOpts) { return ReconcileArgs{}, nil }, &river.PeriodicJobOpts{RunOnStart: true}),
			river.NewPeriodicJob(river.PeriodicInterval(min(opts.RefreshInterval, 10*time.Minute)),
				func() (river.JobArgs, *river.InsertOpts) { return RefreshDueArgs{}, nil }, &river.PeriodicJobOpts{RunOnStart: true}),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	q.client = client
	return q, nil
}

// Start runs jobs until Stop.
func (q *Queue) Start(ctx context.Context) error { return q.client.Start(ctx) }

// Stop lets running jobs finish (bounded by ctx), then stops.
func (q *Queue) Stop(ctx context.Context) error {
	err := q.client.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return q.client.StopAndCancel(context.WithoutCancel(ctx))
	}
	return err
}

// Refresh stamps a refresh request on a source, marks it queued and
// enqueues the refresh, in one transaction. While a refresh waits, another
// is not added (ten quick edits cause one refresh); a refresh that is
// running when the request lands runs once more before it finishes. It
// implements sources.Refresher.
func (q *Queue) Refresh(ctx context.Context, orgID int64, id string) error {
	return q.store.InPgxTx(ctx, func(tx pgx.Tx) error {
		if err := db.MarkQueuedTx(ctx, tx, orgID, id); err != nil {
			return err
		}
		if _, err := q.client.InsertTx(ctx, tx, RefreshArgs{OrgID: orgID, SourceID: id}, nil); err != nil {
			return fmt.Errorf("enqueue refresh of %s: %w", id, err)
		}
		return nil
	})
}

// Delete removes a source, records who did (actorID), and enqueues removing
// its documents from the search index, in one transaction, so no crash
// leaves orphaned documents.
func (q *Queue) Delete(ctx context.Context, orgID int64, id string, actorID int64) error {
	return q.store.InPgxTx(ctx, func(tx pgx.Tx) error {
		if err := db.DeleteSourceTx(ctx, tx, orgID, id, actorID); err != nil {
			return err
		}
		_, err := q.client.InsertTx(ctx, tx, UnindexArgs{OrgID: orgID, SourceID: id}, nil)
		return err
	})
}

// Unindex enqueues removing a deleted source from the search index.
func (q *Queue) Unindex(ctx context.Context, orgID int64, id string) error {
	_, err := q.client.Insert(ctx, UnindexArgs{OrgID: orgID, SourceID: id}, nil)
	return err
}

// Reconcile enqueues a reconcile now (toolgate reindex, tests).
func (q *Queue) Reconcile(ctx context.Context) error {
	_, err := q.client.Insert(ctx, ReconcileArgs{}, nil)
	return err
}

type refreshWorker struct {
	river.WorkerDefaults[RefreshArgs]
	r       *registry.Refresher
	store   *db.Store
	log     *slog.Logger
	timeout time.Duration
}

// Work refreshes the source until no request arrived during the refresh,
// then completes the job in the same transaction that checked, so a request
// is never lost between the check and the completion. A source deleted
// meanwhile needs nothing.
func (w *refreshWorker) Work(ctx context.Context, job *river.Job[RefreshArgs]) error {
	for {
		started, err := w.store.Now(ctx)
		if err != nil {
			return err
		}
		err = w.r.Refresh(ctx, job.Args.OrgID, job.Args.SourceID)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		var again bool
		err = w.store.InPgxTx(ctx, func(tx pgx.Tx) error {
			var err error
			if again, err = db.RefreshRequestedSince(ctx, tx, job.Args.SourceID, started); err != nil || again {
				return err
			}
			_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
			return err
		})
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil || !again {
			return err
		}
	}
}

type unindexWorker struct {
	river.WorkerDefaults[UnindexArgs]
	r *registry.Refresher
}

func (w *unindexWorker) Work(ctx context.Context, job *river.Job[UnindexArgs]) error {
	return w.r.Unindex(ctx, job.Args.OrgID, job.Args.SourceID)
}

type reconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	r     *registry.Refresher
	store *db.Store
	log   *slog.Logger
}

// Work reindexes every source whose index lags behind PostgreSQL.
func (w *reconcileWorker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	behind, err := w.store.Unindexed(ctx, 200)
	if err != nil {
		return err
	}
	for _, src := range behind {
		if err := w.r.Reindex(ctx, src); err != nil {
			return err
		}
	}
	if len(behind) > 0 {
		w.log.Info("reconciled search index", "sources", len(behind))
	}
	return nil
}

type refreshDueWorker struct {
	river.WorkerDefaults[RefreshDueArgs]
	q        *Queue
	store    *db.Store
	interval time.Duration
	log      *slog.Logger
}

func (w *refreshDueWorker) Work(ctx context.Context, job *river.Job[RefreshDueArgs]) error {
	due, err := w.store.DueForRefresh(ctx, time.Now().Add(-w.interval))
	if err != nil {
		return err
	}
	for _, src := range due {
		if err := w.q.Refresh(ctx, src.OrgID, src.ID); err != nil {
			return err
		}
	}
	return nil
}
