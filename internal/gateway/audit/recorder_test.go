package audit_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// tenant is an organization's default workspace with a user and an API key.
type tenant struct {
	store *db.Store
	org   int64
	ws    int64
	user  int64
	key   int64
}

func newTenant(t *testing.T) tenant {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(store.Close)
	u, org, err := (&tenancy.Service{Store: store}).CreateAccount(ctx, "ada@acme.test", "Ada", "correct horse battery", "Acme")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := store.WorkspaceBySlug(ctx, org.ID, "default")
	if err != nil {
		t.Fatal(err)
	}
	k, err := store.CreateAPIKey(ctx, db.NewAPIKey{OrgID: org.ID, WorkspaceID: ws.ID, UserID: u.ID, Name: "claude",
		Prefix: "tgk_test00", Mode: "search", Hash: []byte(rand.Text()), CreatedBy: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	return tenant{store: store, org: org.ID, ws: ws.ID, user: u.ID, key: k.ID}
}

// call is a call of the tenant's key.
func (tn tenant) call(i int) audit.Call {
	key := tn.key
	return audit.Call{OrgID: tn.org, WorkspaceID: tn.ws, KeyID: &key, UserID: tn.user, Via: "mcp",
		Tool: "github.repos_get", SourceID: "src_1", Arguments: json.RawMessage(fmt.Sprintf(`{"owner":"acme","n":%d}`, i)),
		Outcome: audit.OutcomeOK, UpstreamStatus: 200, StartedAt: time.Now(), Duration: 1500 * time.Microsecond}
}

// rows counts the tenant's rows in the table.
func (tn tenant) rows(t *testing.T) int {
	t.Helper()
	var n int
	if err := tn.store.DB().QueryRow(`SELECT count(*) FROM tool_calls WHERE workspace_id = $1`, tn.ws).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func closeRecorder(t *testing.T, r *audit.Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// eventually polls cond for up to 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRecorderBatches: many Records become few inserts, a lone row is
// written after FlushInterval without waiting for Close, and a row keeps
// every field.
func TestRecorderBatches(t *testing.T) {
	tn := newTenant(t)
	r := audit.New(tn.store, audit.Options{BatchSize: 100, FlushInterval: 50 * time.Millisecond})
	const n = 1000
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 4 {
				r.Record(tn.call(g*n + i))
			}
		}()
	}
	wg.Wait()
	eventually(t, "1000 rows written", func() bool { return r.Stats().Written == n })
	s := r.Stats()
	if s.Batches > 20 || s.Queued != 0 || s.Dropped != 0 || s.Failures != 0 {
		t.Fatalf("1000 records: %+v; want at most 20 inserts", s)
	}
	if got := tn.rows(t); got != n {
		t.Fatalf("table holds %d rows, want %d", got, n)
	}

	// A single row goes out on the timer, in one more insert.
	lone := tn.call(-1)
	lone.Tool, lone.Outcome, lone.Error, lone.UpstreamStatus = "github.issues_create", audit.OutcomeError, "upstream answered 502", 502
	r.Record(lone)
	eventually(t, "the lone row", func() bool { return r.Stats().Written == n+1 })
	page, err := tn.store.ToolCalls(context.Background(), tn.org, tn.ws, db.ToolCallFilter{Tool: "github.issues_create"})
	if err != nil || len(page.Calls) != 1 {
		t.Fatalf("lone row: %+v %v", page, err)
	}
	c := page.Calls[0]
	if c.KeyName == nil || *c.KeyName != "claude" || c.UserEmail == nil || *c.UserEmail != "ada@acme.test" || c.Via != "mcp" ||
		c.SourceID != "src_1" || c.Outcome != "error" || c.Error != "upstream answered 502" || c.UpstreamStatus == nil ||
		*c.UpstreamStatus != 502 || c.DurationUS != 1500 || !strings.Contains(string(c.Arguments), `"n": -1`) ||
		time.Since(c.StartedAt) > time.Minute {
		t.Fatalf("row: %+v args %s", c, c.Arguments)
	}
	closeRecorder(t, r)
}

// gatedStore holds each insert until the test lets it through, and notes
// the size of each batch.
type gatedStore struct {
	*db.Store
	gate chan struct{}
	mu   sync.Mutex
	seen []int
}

func (s *gatedStore) InsertToolCalls(ctx context.Context, calls []db.NewToolCall) (int64, error) {
	s.mu.Lock()
	s.seen = append(s.seen, len(calls))
	s.mu.Unlock()
	select {
	case <-s.gate:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.Store.InsertToolCalls(ctx, calls)
}

func (s *gatedStore) batches() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// TestRecorderBatchesRowsThatArriveDuringAnInsert: rows recorded while an
// insert runs wait for their batch to fill (or for FlushInterval) instead
// of following in a small insert of their own; Close writes a partial
// batch at once.
func TestRecorderBatchesRowsThatArriveDuringAnInsert(t *testing.T) {
	tn := newTenant(t)
	s := &gatedStore{Store: tn.store, gate: make(chan struct{})}
	r := audit.New(s, audit.Options{BatchSize: 100, FlushInterval: time.Hour})
	record := func(from, n int) {
		for i := range n {
			r.Record(tn.call(from + i))
		}
	}
	record(0, 100) // a full batch goes at once
	eventually(t, "the first insert", func() bool { return len(s.batches()) == 1 })
	record(100, 30)
	s.gate <- struct{}{}
	eventually(t, "the first batch written", func() bool { return r.Stats().Written == 100 })
	record(130, 70)
	eventually(t, "the second insert", func() bool { return len(s.batches()) == 2 })
	s.gate <- struct{}{}
	eventually(t, "the second batch written", func() bool { return r.Stats().Written == 200 })
	record(200, 1)
	close(s.gate)
	closeRecorder(t, r)
	if got := s.batches(); !slices.Equal(got, []int{100, 100, 1}) {
		t.Fatalf("inserts of %v rows; want 100, 100, then the last row at Close", got)
	}
	if got := tn.rows(t); got != 201 {
		t.Fatalf("table holds %d rows, want 201", got)
	}
}

// TestRecorderCloseFlushes: rows still queued at Close are written before it
// returns, however long the flush interval; later rows are refused.
func TestRecorderCloseFlushes(t *testing.T) {
	tn := newTenant(t)
	r := audit.New(tn.store, audit.Options{BatchSize: 500, FlushInterval: time.Hour})
	for i := range 1234 {
		r.Record(tn.call(i))
	}
	closeRecorder(t, r)
	if s := r.Stats(); s.Written != 1234 || s.Queued != 0 || s.Dropped != 0 {
		t.Fatalf("after close: %+v", s)
	}
	if got := tn.rows(t); got != 1234 {
		t.Fatalf("table holds %d rows, want 1234", got)
	}
	r.Record(tn.call(0))
	if s := r.Stats(); s.Dropped != 1 || s.Queued != 0 {
		t.Fatalf("record after close: %+v", s)
	}
	closeRecorder(t, r) // a second Close is harmless
}

// TestRecorderDoesNotWaitForASlowDatabase holds a lock on the table, so
// every insert waits: Record still returns at once, the rows stay queued,
// and they are written once the lock goes.
func TestRecorderDoesNotWaitForASlowDatabase(t *testing.T) {
	tn := newTenant(t)
	ctx := context.Background()
	tx, err := tn.store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // released below
	if _, err := tx.ExecContext(ctx, `LOCK TABLE tool_calls IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	r := audit.New(tn.store, audit.Options{BatchSize: 50, FlushInterval: 10 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			r.Record(tn.call(i))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked while the database was slow")
	}
	eventually(t, "an insert waiting on the lock", func() bool {
		var waiting int
		err := tn.store.DB().QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO tool_calls%'`).Scan(&waiting)
		return err == nil && waiting > 0
	})
	if s := r.Stats(); s.Queued != 2000 || s.Written != 0 || s.Dropped != 0 {
		t.Fatalf("while locked: %+v", s)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	closeRecorder(t, r)
	if s := r.Stats(); s.Written != 2000 || s.Dropped != 0 {
		t.Fatalf("after the lock: %+v", s)
	}
}

// TestRecorderHoldsRowsWhileTheDatabaseIsDown writes through a store whose
// connections are closed: rows stay queued up to MaxQueued, the rest are
// dropped and logged by count, never by content, and Close gives up when
// its context ends, saying how many rows it lost.
func TestRecorderHoldsRowsWhileTheDatabaseIsDown(t *testing.T) {
	tn := newTenant(t)
	down, err := db.Open(context.Background(), testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	down.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	r := audit.New(down, audit.Options{BatchSize: 20, FlushInterval: 5 * time.Millisecond, MaxQueued: 100,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Logger: log})
	const sentinel = "sentinel-argument-value-7f3a"
	for i := range 150 {
		c := tn.call(i)
		c.Arguments = json.RawMessage(`{"query":"` + sentinel + `"}`)
		r.Record(c)
	}
	eventually(t, "retries", func() bool { return r.Stats().Failures >= 3 })
	if s := r.Stats(); s.Queued != 100 || s.Dropped != 50 || s.Written != 0 {
		t.Fatalf("while down: %+v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = r.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "100 rows not written") {
		t.Fatalf("close while down: %v", err)
	}
	if s := r.Stats(); s.Queued != 0 || s.QueuedBytes != 0 || s.Dropped != 150 {
		t.Fatalf("after close: %+v", s)
	}

	// The memory held is bounded too.
	small := audit.New(down, audit.Options{MaxQueuedBytes: 4 << 10, MinBackoff: time.Hour, Logger: log})
	for i := range 100 {
		small.Record(tn.call(i))
	}
	if s := small.Stats(); s.Queued == 0 || s.Dropped == 0 || s.Queued+int(s.Dropped) != 100 || s.QueuedBytes > 4<<10 {
		t.Fatalf("bounded by bytes: %+v", s)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_ = small.Close(ctx2)
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	for _, want := range []string{"audit write failed; retrying", "audit rows dropped", `"dropped_total":150`, "audit rows lost at shutdown"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, sentinel) || strings.Contains(out, "acme") {
		t.Fatalf("the log holds a row's content:\n%s", out)
	}
}

// lostAckStore writes the first batch it is given and then reports a
// failure, as when PostgreSQL commits but the answer never arrives (the
// write timeout ran out, the connection dropped on the way back).
type lostAckStore struct {
	*db.Store
	mu   sync.Mutex
	lost bool
}

func (s *lostAckStore) InsertToolCalls(ctx context.Context, calls []db.NewToolCall) (int64, error) {
	n, err := s.Store.InsertToolCalls(ctx, calls)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && !s.lost {
		s.lost = true
		return 0, fmt.Errorf("the connection dropped after %d rows were committed", n)
	}
	return n, err
}

// TestRecorderRetryWritesNoRowTwice: the recorder retries an insert whose
// success it never heard of, and the rows that insert wrote are not
// written again; rows recorded meanwhile are.
func TestRecorderRetryWritesNoRowTwice(t *testing.T) {
	tn := newTenant(t)
	s := &lostAckStore{Store: tn.store}
	r := audit.New(s, audit.Options{BatchSize: 50, FlushInterval: time.Millisecond, MinBackoff: 20 * time.Millisecond})
	for i := range 50 {
		r.Record(tn.call(i))
	}
	eventually(t, "the failed insert", func() bool { return r.Stats().Failures == 1 })
	for i := 50; i < 60; i++ {
		r.Record(tn.call(i))
	}
	closeRecorder(t, r)
	if got := tn.rows(t); got != 60 {
		t.Fatalf("table holds %d rows for 60 calls", got)
	}
	var distinct int
	if err := tn.store.DB().QueryRow(`SELECT count(DISTINCT arguments) FROM tool_calls WHERE workspace_id = $1`, tn.ws).Scan(&distinct); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); distinct != 60 || st.Written+st.Skipped != 60 || st.Dropped != 0 {
		t.Fatalf("%d distinct rows; stats %+v", distinct, st)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestRecorderCaps: oversized arguments become a note with a preview,
// errors are cut, text PostgreSQL refuses is cleaned, an unknown outcome is
// kept as an error, and arguments the database still refuses are replaced
// by a note rather than losing the call.
func TestRecorderCaps(t *testing.T) {
	tn := newTenant(t)
	r := audit.New(tn.store, audit.Options{BatchSize: 100, FlushInterval: time.Hour})
	big := tn.call(0)
	big.Tool = "big.args"
	big.Arguments = json.RawMessage(`{"text":"` + strings.Repeat("é", audit.MaxArgumentBytes) + `"}`)
	big.Error = strings.Repeat("ü", audit.MaxErrorBytes)
	r.Record(big)
	odd := tn.call(1)
	odd.Tool = "odd.text\x00" + string([]byte{0xff})
	odd.Arguments = json.RawMessage(`{"nul":"a\u0000b","lone":"\ud800","bad":"` + string([]byte{0xfe}) + `"}`)
	odd.Error = "bad\x00byte"
	odd.Outcome = "exploded"
	r.Record(odd)
	huge := tn.call(2)
	huge.Tool = "huge.number"
	huge.Arguments = json.RawMessage(`{"n":1e1000000}`)
	r.Record(huge)
	long := tn.call(3)
	long.Tool = strings.Repeat("x", 10_000)
	r.Record(long)
	closeRecorder(t, r)
	if s := r.Stats(); s.Written != 4 || s.Dropped != 0 {
		t.Fatalf("stats: %+v", s)
	}

	byTool := map[string]db.ToolCall{}
	page, err := tn.store.ToolCalls(context.Background(), tn.org, tn.ws, db.ToolCallFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range page.Calls {
		byTool[c.Tool] = c
	}

	b := byTool["big.args"]
	var tr audit.Truncated
	if err := json.Unmarshal(b.Arguments, &tr); err != nil || !tr.Truncated || tr.Bytes <= audit.MaxArgumentBytes ||
		tr.Limit != audit.MaxArgumentBytes || !strings.HasPrefix(tr.Preview, `{"text":"éé`) || len(b.Arguments) > audit.MaxArgumentBytes {
		t.Fatalf("oversized arguments: %+v %v (%d bytes)", tr, err, len(b.Arguments))
	}
	if len(b.Error) > audit.MaxErrorBytes || !utf8.ValidString(b.Error) || !strings.HasSuffix(b.Error, "(cut)") {
		t.Fatalf("error kept %d bytes: …%s", len(b.Error), b.Error[len(b.Error)-20:])
	}

	o, ok := byTool["odd.text\uFFFD\uFFFD"]
	if !ok {
		t.Fatalf("odd row missing; tools: %v", keys(byTool))
	}
	var args map[string]string
	if err := json.Unmarshal(o.Arguments, &args); err != nil || args["nul"] != "a\uFFFDb" || args["lone"] != "\uFFFD" || args["bad"] != "\uFFFD" {
		t.Fatalf("odd arguments: %s %v", o.Arguments, err)
	}
	if o.Outcome != audit.OutcomeError || o.Error != `bad`+"\uFFFD"+`byte (outcome "exploded" is unknown to the audit)` {
		t.Fatalf("odd row: %q %q", o.Outcome, o.Error)
	}

	h := byTool["huge.number"]
	if !strings.Contains(string(h.Arguments), "_unstorable") || h.Outcome != audit.OutcomeOK {
		t.Fatalf("unstorable arguments: %s", h.Arguments)
	}
	if _, ok := byTool[strings.Repeat("x", audit.MaxToolBytes)]; !ok {
		t.Fatalf("long tool path not capped at %d: %v", audit.MaxToolBytes, keys(byTool))
	}
}

// TestRecorderSkipsDeletedWorkspaces: a row whose workspace was deleted
// before the write is skipped without failing its batch, and a key of
// another workspace is not attached to a row.
func TestRecorderSkipsDeletedWorkspaces(t *testing.T) {
	tn := newTenant(t)
	ctx := context.Background()
	other, err := tn.store.CreateWorkspace(ctx, tn.org, "other", "Other", 0)
	if err != nil {
		t.Fatal(err)
	}
	r := audit.New(tn.store, audit.Options{BatchSize: 100, FlushInterval: time.Hour})
	gone := tn.call(0)
	gone.WorkspaceID = other.ID
	r.Record(gone)
	if _, err := tn.store.DB().Exec(`DELETE FROM workspaces WHERE id = $1`, other.ID); err != nil {
		t.Fatal(err)
	}
	r.Record(tn.call(1))
	wrongKey := tn.call(2)
	wrongKey.WorkspaceID, wrongKey.Tool = tn.ws, "wrong.key"
	foreign, err := tn.store.CreateWorkspace(ctx, tn.org, "foreign", "Foreign", 0)
	if err != nil {
		t.Fatal(err)
	}
	fk, err := tn.store.CreateAPIKey(ctx, db.NewAPIKey{OrgID: tn.org, WorkspaceID: foreign.ID, UserID: tn.user, Name: "foreign",
		Prefix: "tgk_test01", Mode: "search", Hash: []byte(rand.Text()), CreatedBy: tn.user})
	if err != nil {
		t.Fatal(err)
	}
	wrongKey.KeyID = &fk.ID
	r.Record(wrongKey)
	closeRecorder(t, r)
	if s := r.Stats(); s.Written != 2 || s.Skipped != 1 || s.Dropped != 0 || s.Failures != 0 {
		t.Fatalf("stats: %+v", s)
	}
	page, err := tn.store.ToolCalls(ctx, tn.org, tn.ws, db.ToolCallFilter{Tool: "wrong.key"})
	if err != nil || len(page.Calls) != 1 || page.Calls[0].KeyID != nil {
		t.Fatalf("row with another workspace's key: %+v %v", page.Calls, err)
	}
}

func keys(m map[string]db.ToolCall) []string {
	var out []string
	for k := range m {
		out = append(out, short(k))
	}
	return out
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
