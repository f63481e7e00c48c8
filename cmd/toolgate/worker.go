package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// runWorker runs `toolgate worker`: the background jobs alone, for scaling
// out. Any number may run beside each other and beside `serve`.
func runWorker(ctx context.Context, stderr io.Writer, getenv func(string) string) error {
	a, err := open(ctx, stderr, getenv, true, true)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	q, err := a.queue(true)
	if err != nil {
		return err
	}
	if err := q.Start(ctx); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	a.log.Info("worker running", "concurrency", a.cfg.WorkerConcurrency)
	<-ctx.Done()
	a.log.Info("worker stopping")
	stopQueue(ctx, a, q)
	return nil
}

// reindex runs `toolgate reindex [--org SLUG]`: it rebuilds the search index
// from PostgreSQL, which is the truth.
func reindex(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("reindex", flag.ContinueOnError)
	fs.SetOutput(stderr)
	orgSlug := fs.String("org", "", "only this organization (its slug)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	a, err := open(ctx, stderr, getenv, true, false)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	var orgID int64
	if *orgSlug != "" {
		org, err := a.store.OrganizationBySlug(ctx, *orgSlug)
		if err != nil {
			return fmt.Errorf("organization %q: %w", *orgSlug, err)
		}
		orgID = org.ID
	}
	if err := a.index.Health(ctx); err != nil {
		return fmt.Errorf("meilisearch is not reachable: %w", err)
	}
	all, err := a.store.SourcesOf(ctx, orgID)
	if err != nil {
		return err
	}
	r := a.refresher()
	if orgID != 0 {
		if err := a.index.DeleteWhere(ctx, orgID, ""); err != nil {
			return err
		}
	}
	tools := 0
	for _, src := range all {
		if err := r.Reindex(ctx, src); err != nil {
			return fmt.Errorf("reindex source %s: %w", src.ID, err)
		}
		tools += src.ToolCount
	}
	fmt.Fprintf(stdout, "reindexed %d sources, %d tools\n", len(all), tools)
	return nil
}
