package db_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/db"
)

// announcements listens on the gateway channel for the test's length.
type announcements struct {
	t  *testing.T
	f  *fixture
	ch chan int64
}

func (f *fixture) listen() *announcements {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &announcements{t: f.t, f: f, ch: make(chan int64, 100)}
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = f.store.ListenGatewayChanges(ctx, func() { close(ready) }, func(org int64) { a.ch <- org })
	}()
	f.t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		f.t.Fatal("not listening")
	}
	return a
}

// next is the next organization announced.
func (a *announcements) next(what string) int64 {
	a.t.Helper()
	select {
	case org := <-a.ch:
		return org
	case <-time.After(10 * time.Second):
		a.t.Fatalf("%s: nothing announced", what)
		return 0
	}
}

// expect checks that a change announced org, once.
func (a *announcements) expect(what string, org int64) {
	a.t.Helper()
	if got := a.next(what); got != org {
		a.t.Fatalf("%s announced organization %d, want %d", what, got, org)
	}
	a.quiet(what + " (a second time)")
}

// quiet checks that nothing was announced since the last announcement: it
// makes a change of its own, which must be the next one to arrive.
func (a *announcements) quiet(what string) {
	a.t.Helper()
	marker := a.f.org()
	a.f.exec(`UPDATE organizations SET policy_version = policy_version + 1 WHERE id = $1`, marker)
	if got := a.next(what); got != marker {
		a.t.Fatalf("%s announced organization %d", what, got)
	}
}

func (f *fixture) source(org int64) string {
	id := fmt.Sprintf("src_%x-0000-0000-0000-000000000000", []byte(rand.Text()[:4]))
	f.exec(`INSERT INTO sources (id, org_id, scope, name, slug, type, config_version, config)
		VALUES ($1, $2, 'organization', 'Items', lower($3), 'openapi', 1, '{}')`, id, org, rand.Text()[:10])
	return id
}

// TestGatewayChangesAnnounced: every change that can alter a tool lookup
// announces its organization, once per transaction, however many rows it
// writes; a source's refresh bookkeeping and a credential's use do not.
func TestGatewayChangesAnnounced(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.listen()
	org := f.org()
	ws := f.workspace(org)

	src := f.source(org)
	a.expect("a source added", org)
	f.exec(`UPDATE sources SET enabled = false, updated_at = now() WHERE id = $1`, src)
	a.expect("a source disabled", org)
	f.exec(`UPDATE sources SET approval_override = 'required' WHERE id = $1`, src)
	a.expect("a source's approval override", org)
	f.exec(`UPDATE sources SET generation = generation + 1 WHERE id = $1`, src)
	a.expect("a new generation", org)
	f.exec(`UPDATE sources SET state = 'loading', error = '', last_refreshed_at = now(), last_success_at = now(),
		indexed_generation = generation, index_error = '', refresh_requested_at = now() WHERE id = $1`, src)
	a.quiet("a source's refresh bookkeeping")

	f.exec(`INSERT INTO source_tools (source_id, path, name, input_schema, default_approval, ref)
		SELECT $1, 'items.op' || n, 'op' || n, '{}', 'auto', '{}' FROM generate_series(1, 50) n`, src)
	a.expect("50 tools inserted", org)
	if _, err := f.store.Pool().CopyFrom(ctx, pgx.Identifier{"source_tools"},
		[]string{"source_id", "path", "name", "input_schema", "default_approval", "ref"},
		pgx.CopyFromRows([][]any{{src, "items.copied", "copied", "{}", "auto", "{}"}})); err != nil {
		t.Fatal(err)
	}
	a.expect("tools copied", org)
	f.exec(`UPDATE source_tools SET description = 'changed' WHERE source_id = $1`, src)
	a.expect("tools updated", org)
	f.exec(`DELETE FROM source_tools WHERE source_id = $1 AND path = 'items.op1'`, src)
	a.expect("a tool deleted", org)

	cred := "cred_00000000-0000-0000-0000-000000000001"
	f.exec(`INSERT INTO credentials (id, org_id, source_id, scope, workspace_id, auth, key_id, nonce, ciphertext)
		VALUES ($1, $2, $3, 'workspace', $4, '{}', 'k1', '\x000000000000000000000000', '\x01')`, cred, org, src, ws)
	a.expect("a credential added", org)
	if err := f.store.TouchCredential(ctx, cred); err != nil {
		t.Fatal(err)
	}
	a.quiet("a credential's use")
	f.exec(`UPDATE credentials SET key_id = 'k2', ciphertext = '\x02' WHERE id = $1`, cred)
	a.expect("a credential re-sealed", org)
	f.exec(`DELETE FROM credentials WHERE id = $1`, cred)
	a.expect("a credential deleted", org)

	f.exec(`UPDATE organizations SET name = 'Renamed' WHERE id = $1`, org)
	a.quiet("an organization renamed")
	f.exec(`UPDATE organizations SET policy_version = policy_version + 1 WHERE id = $1`, org)
	a.expect("an organization's policy version", org)
	f.exec(`UPDATE workspaces SET name = 'Renamed' WHERE id = $1`, ws)
	a.quiet("a workspace renamed")
	f.exec(`UPDATE workspaces SET policy_version = policy_version + 1 WHERE id = $1`, ws)
	a.expect("a workspace's policy version", org)
	f.exec(`DELETE FROM workspaces WHERE id = $1`, ws)
	a.expect("a workspace deleted", org)
	f.exec(`DELETE FROM sources WHERE id = $1`, src)
	a.expect("a source deleted", org)
	f.exec(`DELETE FROM organizations WHERE id = $1`, org)
	a.expect("an organization deleted", org)
}

// TestOwnGatewayChangesRunHooks: this process's own writes of what a tool
// lookup reads run the OnGatewayChange hooks with their organization
// before the writing method returns (a replica reads its own writes
// without waiting for the announcement); a write that fails runs none,
// and a removed hook no longer runs.
func TestOwnGatewayChangesRunHooks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	org := f.org()
	var got []int64
	remove := f.store.OnGatewayChange(func(o int64) { got = append(got, o) })
	expect := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) != 1 || got[0] != org {
			t.Fatalf("%s ran the hooks with %v, want [%d]", what, got, org)
		}
		got = nil
	}
	id := fmt.Sprintf("src_%x-0000-0000-0000-000000000000", []byte(rand.Text()[:4]))
	_, err := f.store.CreateSource(ctx, db.NewSource{ID: id, OrgID: org, Scope: "organization", Name: "Items", Slug: "items",
		Type: "openapi", ConfigVersion: 1, Config: []byte(`{}`), Enabled: true})
	expect("CreateSource", err)
	_, err = f.store.UpdateSource(ctx, org, id, nil, db.SourceUpdate{Name: "Items", Slug: "items", Config: []byte(`{}`), Enabled: false})
	expect("UpdateSource", err)
	_, err = f.store.CreatePolicy(ctx, org, nil, 0, db.PolicyFields{TargetType: "everyone", SelectorType: "all", Effect: "deny", Enabled: true, ApprovalTTLSeconds: 600})
	expect("CreatePolicy", err)
	override := "required"
	_, err = f.store.SetSourceApprovalOverride(ctx, org, id, &override)
	expect("SetSourceApprovalOverride", err)
	_, err = f.store.SaveDiscovery(ctx, org, id, db.DiscoveryResult{Signature: "sig", Warnings: []byte(`[]`)})
	expect("SaveDiscovery", err)
	expect("DeleteSource", f.store.DeleteSource(ctx, org, id, 0))

	if err := f.store.DeleteSource(ctx, org, id, 0); !errors.Is(err, db.ErrNotFound) || len(got) != 0 {
		t.Fatalf("a failed delete: %v, hooks ran with %v", err, got)
	}
	remove()
	if _, err := f.store.CreatePolicy(ctx, org, nil, 0, db.PolicyFields{TargetType: "everyone", SelectorType: "all", Effect: "allow", Enabled: true, ApprovalTTLSeconds: 600}); err != nil || len(got) != 0 {
		t.Fatalf("after remove: %v, hooks ran with %v", err, got)
	}
}
