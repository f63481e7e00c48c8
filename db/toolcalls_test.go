package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate/db"
)

// call is an audit row of a key's call.
func call(org, ws int64, key, user *int64, tool string) db.NewToolCall {
	return db.NewToolCall{OrgID: org, WorkspaceID: ws, KeyID: key, UserID: user, Via: "mcp", Tool: tool,
		Arguments: json.RawMessage(`{"n":1}`), Outcome: "ok", StartedAt: time.Now(), DurationUS: 10}
}

// refs is what a row names, by tool; a row gone is missing.
func (f *fixture) refs() map[string][2]*int64 {
	f.t.Helper()
	rows, err := f.store.Pool().Query(context.Background(), `SELECT tool, key_id, user_id FROM tool_calls`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]*int64{}
	for rows.Next() {
		var tool string
		var key, user *int64
		if err := rows.Scan(&tool, &key, &user); err != nil {
			f.t.Fatal(err)
		}
		out[tool] = [2]*int64{key, user}
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// TestToolCallsFollowTheirParents: without foreign keys, deleting a key or
// a user still empties its column in the rows that named it, and deleting
// a workspace or an organization deletes their rows, as the references'
// actions did.
func TestToolCallsFollowTheirParents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	org, other := f.org(), f.org()
	ws, ws2, ws3 := f.workspace(org), f.workspace(org), f.workspace(other)
	ada, bob := f.user(), f.user()
	adaKey, bobKey := f.key(org, ws, ada), f.key(org, ws2, bob)
	n, err := f.store.InsertToolCalls(ctx, []db.NewToolCall{
		call(org, ws, &adaKey, &ada, "ada.call"),
		call(org, ws2, &bobKey, &bob, "bob.call"),
		call(other, ws3, nil, &bob, "other.call"),
	})
	if err != nil || n != 3 {
		t.Fatalf("insert: %d rows, %v", n, err)
	}

	f.exec(`DELETE FROM api_keys WHERE id = $1`, adaKey)
	if r := f.refs()["ada.call"]; r[0] != nil || r[1] == nil || *r[1] != ada {
		t.Fatalf("after the key's deletion the row names key %v user %v; want no key, the user", r[0], r[1])
	}
	f.exec(`DELETE FROM users WHERE id = $1`, bob) // and bob's key with him
	got := f.refs()
	if r := got["bob.call"]; r[0] != nil || r[1] != nil {
		t.Fatalf("after the user's deletion the row names key %v user %v", r[0], r[1])
	}
	if r := got["other.call"]; r[1] != nil {
		t.Fatalf("another organization's row still names the deleted user %v", *r[1])
	}

	f.exec(`DELETE FROM workspaces WHERE id = $1`, ws2)
	if _, ok := f.refs()["bob.call"]; ok {
		t.Fatal("the deleted workspace's row is still there")
	}
	f.exec(`DELETE FROM organizations WHERE id = $1`, org)
	got = f.refs()
	if _, ok := got["ada.call"]; ok || len(got) != 1 {
		t.Fatalf("after the organization's deletion: %v; want only other.call", got)
	}
}

// TestToolCallsDeletionWaitsForTheBatch: a batch locks the workspace and
// the key it names, so deleting them waits for the batch to commit and
// then takes its rows along, as a foreign key's check and action would; a
// batch written after the deletion skips the rows.
func TestToolCallsDeletionWaitsForTheBatch(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	org := f.org()
	ws, gone := f.workspace(org), f.workspace(org)
	user := f.user()
	key, goneKey := f.key(org, ws, user), f.key(org, gone, user)

	tx, err := f.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	n, err := db.InsertToolCallsTx(ctx, tx, []db.NewToolCall{
		call(org, gone, &goneKey, &user, "in.gone"),
		call(org, ws, &key, &user, "keyed"),
	})
	if err != nil || n != 2 {
		t.Fatalf("insert: %d rows, %v", n, err)
	}
	deleted := make(chan error, 2)
	go func() {
		_, err := f.store.Pool().Exec(ctx, `DELETE FROM workspaces WHERE id = $1`, gone)
		deleted <- err
	}()
	go func() {
		_, err := f.store.Pool().Exec(ctx, `DELETE FROM api_keys WHERE id = $1`, key)
		deleted <- err
	}()
	waitForLocks(t, f, 2)
	select {
	case err := <-deleted:
		t.Fatalf("a deletion ended while the batch held its row: %v", err)
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-deleted; err != nil {
			t.Fatal(err)
		}
	}
	got := f.refs()
	if _, ok := got["in.gone"]; ok {
		t.Fatal("the row of the workspace deleted after the batch is still there")
	}
	if r, ok := got["keyed"]; !ok || r[0] != nil {
		t.Fatalf("the row of the key deleted after the batch: %v present %v; want no key", r, ok)
	}

	n, err = f.store.InsertToolCalls(ctx, []db.NewToolCall{call(org, gone, nil, &user, "late"), call(org, ws, &key, &user, "late.key")})
	if err != nil || n != 1 {
		t.Fatalf("a batch after the deletion wrote %d rows, %v; want 1", n, err)
	}
	if r := f.refs()["late.key"]; r[0] != nil {
		t.Fatalf("a deleted key was written: %v", *r[0])
	}
}

// waitForLocks waits until n statements of this database wait for a lock.
func waitForLocks(t *testing.T, f *fixture, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var waiting int
		err := f.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements wait for a lock, want %d", waiting, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestInsertToolCallsSkipsKeysItHolds: a Retry row whose record key the
// table holds is not written again; rows without a key always are.
func TestInsertToolCallsSkipsKeysItHolds(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	org := f.org()
	ws := f.workspace(org)
	keyed := func(tool string, key byte) db.NewToolCall {
		c := call(org, ws, nil, nil, tool)
		c.RecordKey = [16]byte{15: key}
		return c
	}
	first := []db.NewToolCall{keyed("a", 1), keyed("b", 2), call(org, ws, nil, nil, "unkeyed")}
	if n, err := f.store.InsertToolCalls(ctx, first); err != nil || n != 3 {
		t.Fatalf("first insert: %d rows, %v", n, err)
	}
	again := append(first, keyed("c", 3))
	for i := range again {
		again[i].Retry = true
	}
	if n, err := f.store.InsertToolCalls(ctx, again); err != nil || n != 2 {
		t.Fatalf("second insert: %d rows, %v; want the unkeyed row and c", n, err)
	}
	// Without Retry the key is not checked: the unique index refuses it.
	if _, err := f.store.InsertToolCalls(ctx, []db.NewToolCall{keyed("a again", 1)}); !db.RowError(err) {
		t.Fatalf("a held key without Retry: %v", err)
	}
	var got string
	if err := f.store.Pool().QueryRow(ctx, `SELECT string_agg(tool, ',' ORDER BY tool) FROM tool_calls WHERE workspace_id = $1`, ws).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "a,b,c,unkeyed,unkeyed" {
		t.Fatalf("table holds %s", got)
	}
}
