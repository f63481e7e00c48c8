package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/db"
)

// A refresh that loaded a source before a newer refresh was requested (an
// edit landed while it discovered) leaves the source queued whatever it
// writes, so nobody reads "ready" over tools from the older configuration
// while the worker still has to run the newer refresh. A refresh answering
// the latest request writes its state as usual.
func TestStaleRefreshLeavesSourceQueued(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	org := f.org()
	id := f.source(org)
	request := func() {
		t.Helper()
		if err := f.store.InPgxTx(ctx, func(tx pgx.Tx) error { return db.MarkQueuedTx(ctx, tx, org, id) }); err != nil {
			t.Fatal(err)
		}
	}
	answering := func() *db.Answering {
		t.Helper()
		src, err := f.store.Source(ctx, org, id)
		if err != nil {
			t.Fatal(err)
		}
		return &db.Answering{RequestedAt: src.RefreshRequestedAt}
	}
	state := func() string {
		t.Helper()
		src, err := f.store.Source(ctx, org, id)
		if err != nil {
			t.Fatal(err)
		}
		return src.State
	}
	writes := []struct {
		name string
		want string // the state written when no newer request landed
		run  func(a *db.Answering) error
	}{
		{"MarkLoading", "loading", func(a *db.Answering) error { return f.store.MarkLoading(ctx, org, id, a) }},
		{"SaveDiscovery", "indexing", func(a *db.Answering) error {
			_, err := f.store.SaveDiscovery(ctx, org, id, db.DiscoveryResult{Signature: "sig-" + a.RequestedAt.String(), Warnings: []byte(`[]`), Answering: a})
			return err
		}},
		{"MarkUnchanged", "indexing", func(a *db.Answering) error { return f.store.MarkUnchanged(ctx, org, id, a) }},
		{"RecordFailure", "failed", func(a *db.Answering) error { return f.store.RecordFailure(ctx, org, id, "boom", 5, a) }},
	}
	for _, w := range writes {
		request()
		loaded := answering()
		if err := w.run(loaded); err != nil || state() != w.want {
			t.Fatalf("%s answering the latest request: state %q (%v), want %q", w.name, state(), err, w.want)
		}
		request() // an edit lands while the refresh runs
		if err := w.run(loaded); err != nil || state() != "queued" {
			t.Fatalf("%s answering an older request: state %q (%v), want queued", w.name, state(), err)
		}
	}
	// Writers that answer no particular request (reindex, benchmarks)
	// write the state as given.
	if err := f.store.MarkLoading(ctx, org, id, nil); err != nil || state() != "loading" {
		t.Fatalf("MarkLoading without a request: %q (%v)", state(), err)
	}
}
