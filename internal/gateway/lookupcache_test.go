package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/sources"
)

// replica is another toolgate process on the env's database: a store, a
// lookup cache and a gateway of its own. Its cache's TTL is an hour, so
// only an announcement can explain a change it sees.
type replica struct {
	gw    *gateway.Gateway
	cache *gateway.LookupCache
	rec   *recorder
}

func (e *env) replica() *replica {
	e.t.Helper()
	store, err := db.Open(context.Background(), e.store.Pool().Config().ConnString())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(store.Close)
	cache := gateway.NewLookupCache(store, gateway.LookupCacheOptions{TTL: time.Hour})
	e.t.Cleanup(cache.Close)
	waitFor(e.t, "the lookup cache listens", cache.Ready)
	r := &replica{cache: cache, rec: &recorder{}}
	o := e.opts
	o.Store, o.Policies, o.LookupCache, o.Recorder = store, &policy.Service{Store: store}, cache, r.rec
	r.gw = gateway.New(o)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.gw.Close(ctx)
	})
	return r
}

// waitFor polls ok for up to 10 s: announcements travel through
// PostgreSQL, so they arrive shortly after the change commits.
func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// outcome is what a call came to: "key=<what the upstream saw>",
// "refused", "not found", or the error.
func (r *replica) outcome(t testing.TB, api *itemsAPI, c gateway.Caller, path string) string {
	t.Helper()
	before := len(api.requests())
	args := `{}`
	if strings.HasSuffix(path, "get_item") {
		args = `{"id": 1}`
	}
	res, err := r.gw.Call(t.Context(), c, path, json.RawMessage(args), nil)
	var nf *gateway.NotFoundError
	switch {
	case errors.As(err, &nf):
		return "not found"
	case err != nil:
		return err.Error()
	case res.IsError && strings.Contains(text(res), "refused"):
		return "refused"
	case res.IsError:
		return text(res)
	}
	seen := api.requests()[before:]
	if len(seen) != 1 {
		t.Fatalf("one call, the upstream saw %q", seen)
	}
	_, key, _ := strings.Cut(seen[0], " key=")
	return "key=" + key
}

// cached checks that a call comes to want from memory: the lookup is a
// hit. A change after it can only be seen through an announcement.
func (r *replica) cached(t testing.TB, api *itemsAPI, c gateway.Caller, path, want string) {
	t.Helper()
	hits := r.cache.Stats().Hits
	if got := r.outcome(t, api, c, path); got != want {
		t.Fatalf("%s: %s, want %s", path, got, want)
	}
	if r.cache.Stats().Hits == hits {
		t.Fatalf("%s was read from the database, not from memory", path)
	}
}

// TestLookupCacheServesRepeatedCalls: the first call of a path reads the
// database, the next ones are served from memory, per caller.
func TestLookupCacheServesRepeatedCalls(t *testing.T) {
	e, api, ns := itemsEnv(t)
	r := e.replica()
	c := e.a.caller()
	for range 3 {
		if got := r.outcome(t, api, c, ns+"whoami"); got != "key="+itemsKey {
			t.Fatalf("whoami: %s", got)
		}
	}
	if s := r.cache.Stats(); s.Misses != 1 || s.Hits != 2 || s.Entries != 1 || s.Bytes <= 0 {
		t.Fatalf("three calls: %+v; want one read of the database", s)
	}
	// Another user of the workspace has a lookup of its own (its own
	// account credential could apply).
	member := gateway.Caller{OrgID: e.a.org.ID, WorkspaceID: e.a.ws.ID, UserID: e.a.member.UserID, Via: gateway.ViaConsole}
	if got := r.outcome(t, api, member, ns+"whoami"); got != "key="+itemsKey {
		t.Fatalf("member's whoami: %s", got)
	}
	if s := r.cache.Stats(); s.Misses != 2 || s.Entries != 2 {
		t.Fatalf("another user's call: %+v; want a lookup of its own", s)
	}
	// An unknown path is not kept.
	for range 2 {
		if got := r.outcome(t, api, c, ns+"nothing"); got != "not found" {
			t.Fatalf("unknown path: %s", got)
		}
	}
	if s := r.cache.Stats(); s.Entries != 2 {
		t.Fatalf("an unknown path was kept: %+v", s)
	}
}

// TestLookupCacheSeesEveryChangeOnEveryReplica: two replicas serve a tool's
// lookup from memory; a policy written, a credential replaced or deleted,
// a tool removed by rediscovery, a source disabled or deleted, each
// through the product's own services, reaches both as its transaction
// commits, long before their hour-long TTL.
func TestLookupCacheSeesEveryChangeOnEveryReplica(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	api := newItemsAPI(t)
	src := e.source(e.a, &e.a.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	header := credentials.Auth{Type: credentials.TypeAPIKey, In: "header", Name: "X-Api-Key"}
	cred := e.credential(e.a, &e.a.ws, e.a.owner, src, credentials.ScopeWorkspace, header, credentials.Secret{Value: "key-one"})
	replicas := []*replica{e.replica(), e.replica()}
	c := e.a.caller()
	const whoami = "items.whoami"

	// step makes a change and waits until every replica's call of path
	// comes to want, then checks that the replicas keep it in memory again.
	step := func(what string, change func(), path, want string) {
		t.Helper()
		for _, r := range replicas {
			r.outcome(t, api, c, path)
		}
		change()
		for _, r := range replicas {
			waitFor(t, what, func() bool { return r.outcome(t, api, c, path) == want })
			if want == "not found" {
				continue
			}
			// A service may write more after the change (a rediscovery),
			// whose announcements drop the lookup again meanwhile.
			waitFor(t, what+", served from memory again", func() bool {
				hits := r.cache.Stats().Hits
				if got := r.outcome(t, api, c, path); got != want {
					t.Fatalf("%s: %s, then %s", what, want, got)
				}
				return r.cache.Stats().Hits > hits
			})
		}
	}
	for _, r := range replicas {
		r.outcome(t, api, c, whoami)
		r.cached(t, api, c, whoami, "key=key-one")
	}

	place := credentials.Place{OrgID: e.a.org.ID, WorkspaceID: &e.a.ws.ID}
	step("a replaced secret", func() {
		if _, err := e.creds.Update(ctx, place, e.a.owner, cred.ID, credentials.Patch{Secret: &credentials.Secret{Value: "key-two"}}); err != nil {
			t.Fatal(err)
		}
	}, whoami, "key=key-two")

	var deny db.Policy
	step("an organization's rule", func() {
		deny = e.rule(e.a, nil, db.PolicyFields{SelectorType: "pattern", Selector: whoami, Effect: "deny", Note: "no"})
		if _, err := e.store.MovePolicy(ctx, e.a.org.ID, nil, deny.ID, 0, true); err != nil {
			t.Fatal(err)
		}
	}, whoami, "refused")
	step("an organization's rule deleted", func() {
		if err := e.store.DeletePolicy(ctx, e.a.org.ID, nil, deny.ID, 0); err != nil {
			t.Fatal(err)
		}
	}, whoami, "key=key-two")
	step("a workspace's rule", func() {
		deny = e.rule(e.a, &e.a.ws, db.PolicyFields{SelectorType: "pattern", Selector: whoami, Effect: "deny", Note: "no"})
	}, whoami, "refused")
	step("a workspace's rule deleted", func() {
		if err := e.store.DeletePolicy(ctx, e.a.org.ID, &e.a.ws.ID, deny.ID, 0); err != nil {
			t.Fatal(err)
		}
	}, whoami, "key=key-two")

	step("a deleted credential", func() {
		if err := e.creds.Delete(ctx, place, e.a.owner, cred.ID); err != nil {
			t.Fatal(err)
		}
	}, whoami, "key=")

	step("a tool removed by rediscovery", func() {
		var spec map[string]any
		if err := json.Unmarshal([]byte(itemsSpec), &spec); err != nil {
			t.Fatal(err)
		}
		delete(spec["paths"].(map[string]any), "/whoami")
		raw, _ := json.Marshal(spec)
		cfg, _ := json.Marshal(openAPIConfig(string(raw), api.URL))
		updated, err := e.sources.Update(ctx, src, sources.Patch{Config: cfg, ActorID: e.a.owner.UserID})
		if err != nil {
			t.Fatal(err)
		}
		src = updated
	}, whoami, "not found")

	const getItem = "items.get_item"
	for _, r := range replicas {
		r.outcome(t, api, c, getItem)
	}
	step("a disabled source", func() {
		var err error
		if src, err = e.sources.SetEnabled(ctx, src, 0, false); err != nil {
			t.Fatal(err)
		}
	}, getItem, "not found")
	step("an enabled source", func() {
		var err error
		if src, err = e.sources.SetEnabled(ctx, src, 0, true); err != nil {
			t.Fatal(err)
		}
	}, getItem, "key=")
	step("a deleted source", func() {
		if err := e.sources.Delete(ctx, src, 0); err != nil {
			t.Fatal(err)
		}
	}, getItem, "not found")
}

// TestLookupCacheWorkspaceDeleted: a deleted workspace's tools are gone on
// every replica, however recently they were looked up.
func TestLookupCacheWorkspaceDeleted(t *testing.T) {
	e := newEnv(t)
	api := newItemsAPI(t)
	e.source(e.a, &e.a.ws2, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	replicas := []*replica{e.replica(), e.replica()}
	c := gateway.Caller{OrgID: e.a.org.ID, WorkspaceID: e.a.ws2.ID, UserID: e.a.owner.UserID, Via: gateway.ViaConsole}
	for _, r := range replicas {
		r.outcome(t, api, c, "items.whoami")
		r.cached(t, api, c, "items.whoami", "key=")
	}
	if err := e.store.DeleteWorkspace(t.Context(), e.a.org.ID, e.a.ws2.ID, 0); err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		waitFor(t, "the deleted workspace's tool gone", func() bool { return r.outcome(t, api, c, "items.whoami") == "not found" })
	}
}

// TestLookupCacheKeepsTenantsApart: two organizations with a tool of the
// same path each get their own, from memory too, and a change in one
// leaves the other's lookups in memory.
func TestLookupCacheKeepsTenantsApart(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	api := newItemsAPI(t)
	header := credentials.Auth{Type: credentials.TypeAPIKey, In: "header", Name: "X-Api-Key"}
	srcA := e.source(e.a, &e.a.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	e.credential(e.a, &e.a.ws, e.a.owner, srcA, credentials.ScopeWorkspace, header, credentials.Secret{Value: "tenant-a-key"})
	srcB := e.source(e.b, &e.b.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	e.credential(e.b, &e.b.ws, e.b.owner, srcB, credentials.ScopeWorkspace, header, credentials.Secret{Value: "tenant-b-key"})
	r := e.replica()
	a, b := e.a.caller(), e.b.caller()
	const whoami = "items.whoami"

	if got := r.outcome(t, api, a, whoami); got != "key=tenant-a-key" {
		t.Fatalf("tenant a: %s", got)
	}
	misses := r.cache.Stats().Misses
	if got := r.outcome(t, api, b, whoami); got != "key=tenant-b-key" {
		t.Fatalf("tenant b, after tenant a's lookup of the same path: %s", got)
	}
	if r.cache.Stats().Misses != misses+1 {
		t.Fatal("tenant b's call was served tenant a's lookup")
	}
	r.cached(t, api, a, whoami, "key=tenant-a-key")
	r.cached(t, api, b, whoami, "key=tenant-b-key")
	if got := r.rec.last(t).SourceID; got != srcB.ID {
		t.Fatalf("tenant b's call ran tenant a's source %s", got)
	}

	if _, err := e.sources.SetEnabled(ctx, srcB, 0, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tenant b's disabled source", func() bool { return r.outcome(t, api, b, whoami) == "not found" })
	r.cached(t, api, a, whoami, "key=tenant-a-key")
}

// TestLookupCacheListenerLost: announcements sent while the cache's
// listening connection is down are lost, so it forgets what it knew,
// reads the database meanwhile, and keeps lookups again once it listens.
func TestLookupCacheListenerLost(t *testing.T) {
	e, api, ns := itemsEnv(t)
	r := e.replica()
	c := e.a.caller()
	r.outcome(t, api, c, ns+"whoami")
	r.cached(t, api, c, ns+"whoami", "key="+itemsKey)

	var ended int
	if err := e.store.DB().QueryRowContext(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN `+db.GatewayChannel+`'`).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("end the listening connection: %d ended, %v", ended, err)
	}
	waitFor(t, "the cache knows it does not listen", func() bool { return !r.cache.Ready() })
	if s := r.cache.Stats(); s.Entries != 0 {
		t.Fatalf("not listening, the cache still holds %d lookups", s.Entries)
	}
	hits := r.cache.Stats().Hits
	r.outcome(t, api, c, ns+"whoami")
	r.outcome(t, api, c, ns+"whoami")
	if !r.cache.Ready() && r.cache.Stats().Hits != hits {
		t.Fatal("served from memory while not listening")
	}
	waitFor(t, "listening again", r.cache.Ready)
	r.outcome(t, api, c, ns+"whoami")
	r.cached(t, api, c, ns+"whoami", "key="+itemsKey)
}
