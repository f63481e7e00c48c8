package credentials_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/internal/worker"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fixture is an organization with two workspaces, its people and sources.
type fixture struct {
	t        *testing.T
	store    *db.Store
	svc      *credentials.Service
	sources  *sources.Service
	org      db.Organization
	ws, ws2  db.Workspace
	owner    credentials.Actor
	alice    credentials.Actor // member
	bob      credentials.Actor // member
	viewer   credentials.Actor
	wsSource db.Source // in ws
	orgSrc   db.Source // organization-wide
	stdio    db.Source // an MCP stdio server in ws
	entry    string    // the key ring's one entry
}

const spec = `{"openapi": "3.0.3", "info": {"title": "T", "version": "1"},
	"servers": [{"url": "https://api.example.test"}],
	"paths": {"/things": {"get": {"operationId": "listThings", "responses": {"200": {"description": "ok"}}}}}}`

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	q, err := worker.NewQueue(store)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := secrets.NewKeyEntry()
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secrets.ParseRing(entry)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: store, entry: entry}
	f.sources = &sources.Service{Store: store, Refresher: q, Rules: sources.Rules{AllowStdio: true}}
	f.svc = &credentials.Service{Store: store, Ring: ring, Refresher: q, Sources: f.sources}
	f.sources.Credentials = f.svc
	ten := &tenancy.Service{Store: store}
	suffix := strings.ToLower(rand.Text()[:8])
	person := func(name string, role auth.Role, orgName string) credentials.Actor {
		u, org, err := ten.CreateAccount(ctx, name+"-"+suffix+"@example.test", name, "correct horse battery", orgName)
		if err != nil {
			t.Fatal(err)
		}
		if org != nil {
			f.org = *org
		} else if err := store.InTx(ctx, func(tx *sqlx.Tx) error { return db.AddMember(ctx, tx, f.org.ID, u.ID, string(role)) }); err != nil {
			t.Fatal(err)
		}
		return credentials.Actor{UserID: u.ID, Role: role}
	}
	f.owner = person("owner", auth.Owner, "Creds "+suffix)
	f.alice = person("alice", auth.Member, "")
	f.bob = person("bob", auth.Member, "")
	f.viewer = person("viewer", auth.Viewer, "")
	err = store.InTx(ctx, func(tx *sqlx.Tx) error {
		if f.ws, err = db.CreateWorkspace(ctx, tx, f.org.ID, "one", "One"); err != nil {
			return err
		}
		f.ws2, err = db.CreateWorkspace(ctx, tx, f.org.ID, "two", "Two")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, ws *int64, typ sources.Type, cfg string) db.Source {
		scope := sources.ScopeWorkspace
		if ws == nil {
			scope = sources.ScopeOrganization
		}
		src, err := f.sources.Create(ctx, f.org.ID, ws, sources.Input{Name: name, Type: typ, Scope: scope, Config: json.RawMessage(cfg), ActorID: f.owner.UserID})
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	f.wsSource = mk("Things", &f.ws.ID, sources.TypeOpenAPI, `{"spec": `+spec+`}`)
	f.orgSrc = mk("Shared", nil, sources.TypeOpenAPI, `{"spec": `+spec+`}`)
	f.stdio = mk("Local", &f.ws.ID, sources.TypeMCP, `{"transport": "stdio", "command": "/bin/true"}`)
	return f
}

func (f *fixture) inWS(ws db.Workspace) credentials.Place {
	return credentials.Place{OrgID: f.org.ID, WorkspaceID: &ws.ID}
}

func (f *fixture) inOrg() credentials.Place { return credentials.Place{OrgID: f.org.ID} }

func (f *fixture) create(place credentials.Place, actor credentials.Actor, src db.Source, scope credentials.Scope, token string) db.Credential {
	f.t.Helper()
	c, err := f.svc.Create(context.Background(), place, actor, credentials.Input{SourceID: src.ID, Scope: scope,
		Auth: credentials.Auth{Type: credentials.TypeBearer}, Secret: &credentials.Secret{Value: token}})
	if err != nil {
		f.t.Fatalf("create %s credential: %v", scope, err)
	}
	return c
}

// token is the bearer token a resolution carries, or "".
func token(t *testing.T, r *credentials.Resolved) string {
	t.Helper()
	if r == nil {
		return ""
	}
	return strings.TrimPrefix(r.Auth.Headers["Authorization"], "Bearer ")
}

func TestResolveOrder(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.create(f.inOrg(), f.owner, f.orgSrc, credentials.ScopeOrganization, "org-token-0001")
	f.create(f.inWS(f.ws), f.owner, f.orgSrc, credentials.ScopeWorkspace, "ws-token-0001")
	mine := f.create(f.inWS(f.ws), f.alice, f.orgSrc, credentials.ScopeAccount, "alice-token-0001")

	cases := []struct {
		name string
		ws   db.Workspace
		user *int64
		want string
	}{
		{"alice's own first", f.ws, &f.alice.UserID, "alice-token-0001"},
		{"bob never gets alice's", f.ws, &f.bob.UserID, "ws-token-0001"},
		{"then the workspace's", f.ws, nil, "ws-token-0001"},
		{"another workspace falls to the organization's", f.ws2, &f.bob.UserID, "org-token-0001"},
		{"alice's own applies in every workspace", f.ws2, &f.alice.UserID, "alice-token-0001"},
	}
	for _, c := range cases {
		r, err := f.svc.Resolve(ctx, f.orgSrc, c.ws.ID, c.user)
		if err != nil {
			t.Fatal(err)
		}
		if got := token(t, r); got != c.want {
			t.Errorf("%s: resolved %q, want %q", c.name, got, c.want)
		}
	}
	// Discovery never uses an account credential: an organization source
	// discovers with the organization's.
	a, err := f.svc.ForDiscovery(ctx, f.orgSrc)
	if err != nil || a.Headers["Authorization"] != "Bearer org-token-0001" {
		t.Errorf("discovery of the organization source: %v %v", a, err)
	}
	if r, err := f.svc.Resolve(ctx, f.wsSource, f.ws.ID, &f.alice.UserID); r != nil || err != nil {
		t.Errorf("a source without credentials resolved %v, %v", r, err)
	}
	// Resolving records the use.
	got, err := f.svc.Get(ctx, f.inOrg(), f.alice, mine.ID)
	if err != nil || got.LastUsedAt == nil {
		t.Errorf("last used not recorded: %v %v", got.LastUsedAt, err)
	}
}

func TestAccountCredentialsArePrivate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.create(f.inWS(f.ws), f.alice, f.wsSource, credentials.ScopeAccount, "alice-secret-123456")
	for name, actor := range map[string]credentials.Actor{"bob": f.bob, "the owner": f.owner, "a viewer": f.viewer} {
		if _, err := f.svc.Get(ctx, f.inWS(f.ws), actor, c.ID); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s read alice's credential: %v", name, err)
		}
		_, err := f.svc.Update(ctx, f.inWS(f.ws), actor, c.ID, credentials.Patch{Secret: &credentials.Secret{Value: "overwritten-by-" + name}})
		if !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s overwrote alice's credential: %v", name, err)
		}
		if err := f.svc.Delete(ctx, f.inWS(f.ws), actor, c.ID); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s deleted alice's credential: %v", name, err)
		}
		list, err := f.svc.List(ctx, f.inOrg(), actor, "", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list {
			if l.ID == c.ID {
				t.Errorf("%s lists alice's credential", name)
			}
		}
	}
	r, err := f.svc.Resolve(ctx, f.wsSource, f.ws.ID, &f.alice.UserID)
	if err != nil || token(t, r) != "alice-secret-123456" {
		t.Errorf("alice's credential changed: %q %v", token(t, r), err)
	}
	mine, err := f.svc.Mine(ctx, f.alice.UserID)
	if err != nil || len(mine) != 1 || mine[0].ID != c.ID {
		t.Errorf("alice's own list: %v %v", mine, err)
	}
}

func TestWhoMayCreate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	in := func(src db.Source, scope credentials.Scope) credentials.Input {
		return credentials.Input{SourceID: src.ID, Scope: scope, Auth: credentials.Auth{Type: credentials.TypeAPIKey, Name: "X-API-Key"}, Secret: &credentials.Secret{Value: "k-1234567890"}}
	}
	cases := []struct {
		name  string
		place credentials.Place
		actor credentials.Actor
		in    credentials.Input
		want  error // nil, auth.ErrForbidden, or a validation field
		field string
	}{
		{"viewer, own", f.inWS(f.ws), f.viewer, in(f.wsSource, credentials.ScopeAccount), auth.ErrForbidden, ""},
		{"member, workspace", f.inWS(f.ws), f.alice, in(f.wsSource, credentials.ScopeWorkspace), auth.ErrForbidden, ""},
		{"member, organization", f.inOrg(), f.alice, in(f.orgSrc, credentials.ScopeOrganization), auth.ErrForbidden, ""},
		{"member, own", f.inWS(f.ws), f.alice, in(f.wsSource, credentials.ScopeAccount), nil, ""},
		{"owner, workspace", f.inWS(f.ws), f.owner, in(f.wsSource, credentials.ScopeWorkspace), nil, ""},
		{"owner, workspace again", f.inWS(f.ws), f.owner, in(f.wsSource, credentials.ScopeWorkspace), nil, "source_id"},
		{"workspace scope outside a workspace", f.inOrg(), f.owner, in(f.orgSrc, credentials.ScopeWorkspace), nil, "scope"},
		{"a source of another workspace", f.inWS(f.ws2), f.owner, in(f.wsSource, credentials.ScopeWorkspace), nil, "source_id"},
		{"a source that does not exist", f.inOrg(), f.owner, in(db.Source{ID: "src_00000000-0000-0000-0000-000000000000"}, credentials.ScopeOrganization), nil, "source_id"},
		{"an unknown scope", f.inOrg(), f.owner, in(f.orgSrc, "team"), nil, "scope"},
	}
	for _, c := range cases {
		_, err := f.svc.Create(ctx, c.place, c.actor, c.in)
		var fields validation.Errors
		switch {
		case c.field != "":
			if !errors.As(err, &fields) || fields[c.field] == "" {
				t.Errorf("%s: error %v, want a problem with %s", c.name, err, c.field)
			}
		case c.want != nil:
			if !errors.Is(err, c.want) {
				t.Errorf("%s: error %v, want %v", c.name, err, c.want)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestInputIsChecked(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cases := []struct {
		name  string
		src   db.Source
		auth  credentials.Auth
		sec   *credentials.Secret
		field string
	}{
		{"no secret", f.wsSource, credentials.Auth{Type: credentials.TypeBearer}, nil, "secret"},
		{"empty token", f.wsSource, credentials.Auth{Type: credentials.TypeBearer}, &credentials.Secret{Value: "  "}, "secret.value"},
		{"a token on two lines", f.wsSource, credentials.Auth{Type: credentials.TypeBearer}, &credentials.Secret{Value: "a\nb"}, "secret.value"},
		{"a bad header", f.wsSource, credentials.Auth{Type: credentials.TypeBearer, Header: "X Bad"}, &credentials.Secret{Value: "t"}, "auth.header"},
		{"an API key without a name", f.wsSource, credentials.Auth{Type: credentials.TypeAPIKey, In: "query"}, &credentials.Secret{Value: "t"}, "auth.name"},
		{"an API key in a cookie", f.wsSource, credentials.Auth{Type: credentials.TypeAPIKey, In: "cookie", Name: "sid"}, &credentials.Secret{Value: "t"}, "auth.in"},
		{"basic without a username", f.wsSource, credentials.Auth{Type: credentials.TypeBasic}, &credentials.Secret{Password: "p"}, "auth.username"},
		{"basic without a password", f.wsSource, credentials.Auth{Type: credentials.TypeBasic, Username: "u"}, &credentials.Secret{}, "secret.password"},
		{"headers without pairs", f.wsSource, credentials.Auth{Type: credentials.TypeHeaders}, &credentials.Secret{}, "secret.headers"},
		{"a header name with a space", f.wsSource, credentials.Auth{Type: credentials.TypeHeaders}, &credentials.Secret{Headers: map[string]string{"X Token": "v"}}, "secret.headers"},
		{"a protocol header", f.wsSource, credentials.Auth{Type: credentials.TypeHeaders}, &credentials.Secret{Headers: map[string]string{"Mcp-Session-Id": "v"}}, "secret.headers"},
		{"a token in Content-Type", f.wsSource, credentials.Auth{Type: credentials.TypeBearer, Header: "content-type"}, &credentials.Secret{Value: "v"}, "auth.header"},
		{"an unknown type", f.wsSource, credentials.Auth{Type: "oauth9"}, &credentials.Secret{Value: "v"}, "auth.type"},
		{"a bearer token for a stdio server", f.stdio, credentials.Auth{Type: credentials.TypeBearer}, &credentials.Secret{Value: "v"}, "auth.type"},
		{"a bad variable name for a stdio server", f.stdio, credentials.Auth{Type: credentials.TypeHeaders}, &credentials.Secret{Headers: map[string]string{"X-Token": "v"}}, "secret.headers"},
		{"a value too long", f.wsSource, credentials.Auth{Type: credentials.TypeBearer}, &credentials.Secret{Value: strings.Repeat("x", credentials.MaxSecretBytes+1)}, "secret.value"},
	}
	for _, c := range cases {
		_, err := f.svc.Create(ctx, f.inWS(f.ws), f.owner, credentials.Input{SourceID: c.src.ID, Scope: credentials.ScopeWorkspace, Auth: c.auth, Secret: c.sec})
		var fields validation.Errors
		if !errors.As(err, &fields) || fields[c.field] == "" {
			t.Errorf("%s: error %v, want a problem with %s", c.name, err, c.field)
		}
		if c.sec != nil && len(c.sec.Value) > 2 && err != nil && strings.Contains(err.Error(), c.sec.Value) {
			t.Errorf("%s: the error shows the secret", c.name)
		}
	}
	// A stdio server takes custom headers as environment variables.
	c, err := f.svc.Create(ctx, f.inWS(f.ws), f.owner, credentials.Input{SourceID: f.stdio.ID,
		Auth: credentials.Auth{Type: credentials.TypeHeaders}, Secret: &credentials.Secret{Headers: map[string]string{"API_TOKEN": "env-secret-value"}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.svc.ForDiscovery(ctx, f.stdio)
	if err != nil || a.Env["API_TOKEN"] != "env-secret-value" || len(a.Headers) != 0 {
		t.Errorf("stdio discovery auth = %+v, %v", a, err)
	}
	if credentials.AuthOf(c).Describe() != "API_TOKEN" {
		t.Errorf("describe = %q", credentials.AuthOf(c).Describe())
	}
}

func TestAuthTypesBuildRequests(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cases := []struct {
		auth    credentials.Auth
		sec     credentials.Secret
		headers map[string]string
		query   map[string]string
		hint    string
	}{
		{credentials.Auth{Type: credentials.TypeBearer}, credentials.Secret{Value: "ghp_abcdefghijklmnop"}, map[string]string{"Authorization": "Bearer ghp_abcdefghijklmnop"}, nil, "…mnop"},
		{credentials.Auth{Type: credentials.TypeBearer, Header: "x-token", Scheme: ""}, credentials.Secret{Value: "short"}, map[string]string{"X-Token": "short"}, nil, ""},
		{credentials.Auth{Type: credentials.TypeBearer, Scheme: "Token"}, credentials.Secret{Value: "t0k"}, map[string]string{"Authorization": "Token t0k"}, nil, ""},
		{credentials.Auth{Type: credentials.TypeAPIKey, Name: "X-API-Key"}, credentials.Secret{Value: "key-1"}, map[string]string{"X-Api-Key": "key-1"}, nil, ""},
		{credentials.Auth{Type: credentials.TypeAPIKey, In: "query", Name: "api_key"}, credentials.Secret{Value: "key-2"}, nil, map[string]string{"api_key": "key-2"}, ""},
		{credentials.Auth{Type: credentials.TypeBasic, Username: "ann"}, credentials.Secret{Password: "pw"}, map[string]string{"Authorization": "Basic YW5uOnB3"}, nil, ""},
		{credentials.Auth{Type: credentials.TypeHeaders}, credentials.Secret{Headers: map[string]string{"CF-Access-Client-Id": "id-1", "CF-Access-Client-Secret": "s-1"}},
			map[string]string{"CF-Access-Client-Id": "id-1", "CF-Access-Client-Secret": "s-1"}, nil, ""},
		{credentials.Auth{Type: credentials.TypeNone}, credentials.Secret{}, nil, nil, ""},
	}
	for i, c := range cases {
		sec := c.sec
		cred, err := f.svc.Create(ctx, f.inOrg(), f.owner, credentials.Input{SourceID: f.orgSrc.ID, Auth: c.auth, Secret: &sec})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if cred.Hint != c.hint {
			t.Errorf("case %d: hint %q, want %q", i, cred.Hint, c.hint)
		}
		a, err := f.svc.ForDiscovery(ctx, f.orgSrc)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Headers) != len(c.headers) || len(a.Query) != len(c.query) {
			t.Errorf("case %d: headers %v query %v", i, a.Headers, a.Query)
		}
		for k, v := range c.headers {
			if a.Headers[k] != v {
				t.Errorf("case %d: header %s = %q, want %q", i, k, a.Headers[k], v)
			}
		}
		for k, v := range c.query {
			if a.Query[k] != v {
				t.Errorf("case %d: query %s = %q, want %q", i, k, a.Query[k], v)
			}
		}
		if sec.Value != "" && strings.Contains(a.Redact("upstream said: "+sec.Value), sec.Value) {
			t.Errorf("case %d: not redacted", i)
		}
		if err := f.svc.Delete(ctx, f.inOrg(), f.owner, cred.ID); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUpdateKeepsOrReplacesTheSecret(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.create(f.inWS(f.ws), f.owner, f.wsSource, credentials.ScopeWorkspace, "first-token-abcd")
	// New parameters, no secret: the stored value stays.
	u, err := f.svc.Update(ctx, f.inWS(f.ws), f.owner, c.ID, credentials.Patch{Auth: &credentials.Auth{Type: credentials.TypeBearer, Header: "X-Token"}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.svc.ForDiscovery(ctx, f.wsSource)
	if a.Headers["X-Token"] != "first-token-abcd" || u.Hint != "…abcd" {
		t.Errorf("after a parameter change: %v, hint %q", a.Headers, u.Hint)
	}
	// Parameters without a type change the stored type's.
	if _, err := f.svc.Update(ctx, f.inWS(f.ws), f.owner, c.ID, credentials.Patch{Auth: &credentials.Auth{Scheme: "Token"}}); err != nil {
		t.Fatal(err)
	}
	a, _ = f.svc.ForDiscovery(ctx, f.wsSource)
	if a.Headers["X-Token"] != "Token first-token-abcd" {
		t.Errorf("after a partial change: %v", a.Headers)
	}
	// A new type needs its secret.
	_, err = f.svc.Update(ctx, f.inWS(f.ws), f.owner, c.ID, credentials.Patch{Auth: &credentials.Auth{Type: credentials.TypeBasic, Username: "u"}})
	var fields validation.Errors
	if !errors.As(err, &fields) || fields["secret"] == "" {
		t.Errorf("type change without a secret: %v", err)
	}
	// Replacing the value.
	if _, err := f.svc.Update(ctx, f.inWS(f.ws), f.owner, c.ID, credentials.Patch{Secret: &credentials.Secret{Value: "second-token-wxyz"}}); err != nil {
		t.Fatal(err)
	}
	a, _ = f.svc.ForDiscovery(ctx, f.wsSource)
	if a.Headers["X-Token"] != "Token second-token-wxyz" {
		t.Errorf("after replace: %v", a.Headers)
	}
	// A member may not change the workspace's credential.
	if _, err := f.svc.Update(ctx, f.inWS(f.ws), f.alice, c.ID, credentials.Patch{Secret: &credentials.Secret{Value: "x"}}); !errors.Is(err, auth.ErrForbidden) {
		t.Errorf("member replaced the workspace credential: %v", err)
	}
	// From another workspace it does not exist.
	if _, err := f.svc.Get(ctx, f.inWS(f.ws2), f.owner, c.ID); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("workspace two sees workspace one's credential: %v", err)
	}
	events, err := f.store.AuditEvents(ctx, f.org.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, e := range events {
		actions[e.Action]++
		if strings.Contains(string(e.Details), "token-") {
			t.Errorf("an audit row carries the secret: %s", e.Details)
		}
	}
	if actions["credential.created"] != 1 || actions["credential.updated"] != 2 || actions["credential.replaced"] != 1 {
		t.Errorf("audit actions = %v", actions)
	}
}

func TestCiphertextIsBoundToItsRow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.create(f.inWS(f.ws), f.owner, f.wsSource, credentials.ScopeWorkspace, "token-of-row-a")
	b := f.create(f.inOrg(), f.owner, f.orgSrc, credentials.ScopeOrganization, "token-of-row-b")
	// Copy a's sealed value onto b: it must not open as b.
	err := f.store.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE credentials SET key_id = src.key_id, nonce = src.nonce, ciphertext = src.ciphertext
			FROM credentials src WHERE src.id = $1 AND credentials.id = $2`, a.ID, b.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ForDiscovery(ctx, f.orgSrc)
	if err == nil || !strings.Contains(err.Error(), b.ID) || strings.Contains(err.Error(), "token-of-row") {
		t.Errorf("a copied ciphertext: %v", err)
	}
	// One changed byte of a's ciphertext: a no longer opens either.
	err = f.store.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE credentials SET ciphertext = set_byte(ciphertext, 0, get_byte(ciphertext, 0) # 1) WHERE id = $1`, a.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.ForDiscovery(ctx, f.wsSource); err == nil {
		t.Error("a changed ciphertext opened")
	}
	// Stored bytes never hold the plaintext.
	var n int
	if err := f.store.InTx(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &n, `SELECT count(*) FROM credentials WHERE position(convert_to('token-of-row', 'UTF8') in ciphertext) > 0 OR auth::text LIKE '%token-of-row%' OR hint LIKE '%token-of-row%'`)
	}); err != nil || n != 0 {
		t.Errorf("%d rows hold the plaintext (%v)", n, err)
	}
}

func TestRotate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		scope, place, src := credentials.ScopeAccount, f.inWS(f.ws), f.wsSource
		actor := []credentials.Actor{f.owner, f.alice, f.bob}[i%3]
		if i >= 3 {
			scope, place, src = credentials.ScopeOrganization, f.inOrg(), []db.Source{f.orgSrc, f.wsSource}[i-3]
			actor = f.owner
		}
		ids = append(ids, f.create(place, actor, src, scope, "rotate-me-"+string(rune('a'+i))).ID)
	}
	oldEntry := f.entry
	newEntry, _ := secrets.NewKeyEntry()
	ring, err := secrets.ParseRing(newEntry + "," + oldEntry)
	if err != nil {
		t.Fatal(err)
	}
	// A value under a key nobody has any more.
	lostEntry, _ := secrets.NewKeyEntry()
	lost, _ := secrets.ParseRing(lostEntry)
	f.svc.Ring = lost
	orphan := f.create(f.inWS(f.ws2), f.owner, f.orgSrc, credentials.ScopeWorkspace, "under-a-lost-key")
	f.svc.Ring = ring

	// Interrupted after two values...
	cctx, cancel := context.WithCancel(ctx)
	rep, err := credentials.Rotate(cctx, f.store, ring, func(r credentials.RotateReport) {
		if r.Resealed == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || rep.Resealed != 2 {
		t.Fatalf("interrupted rotation: %+v, %v", rep, err)
	}
	// ...and run again: the rest, once each, and the lost one reported.
	rep, err = credentials.Rotate(ctx, f.store, ring, nil)
	if err != nil || rep.Resealed < 3 || len(rep.Failed) < 1 {
		t.Fatalf("second rotation: %+v, %v", rep, err)
	}
	reported := false
	for _, msg := range rep.Failed {
		if strings.Contains(msg, orphan.ID) && strings.Contains(msg, lost.Current()) {
			reported = true
		}
	}
	if !reported {
		t.Errorf("the value under a lost key was not reported: %v", rep.Failed)
	}
	again, err := credentials.Rotate(ctx, f.store, ring, nil)
	if err != nil || again.Resealed != 0 {
		t.Errorf("a third rotation resealed %d (%v)", again.Resealed, err)
	}
	// Every value opens with the new key alone.
	only, _ := secrets.ParseRing(newEntry)
	f.svc.Ring = only
	for _, id := range ids {
		c, err := f.store.Credential(ctx, f.org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.KeyID != only.Current() {
			t.Errorf("credential %s is still under %s", id, c.KeyID)
		}
	}
	r, err := f.svc.Resolve(ctx, f.wsSource, f.ws.ID, &f.bob.UserID)
	if err != nil || token(t, r) != "rotate-me-c" {
		t.Errorf("bob's credential after rotation: %q %v", token(t, r), err)
	}
	// The lost one is a clear error naming the key, not a crash.
	_, err = f.svc.ForDiscovery(ctx, db.Source{ID: f.orgSrc.ID, OrgID: f.org.ID, WorkspaceID: &f.ws2.ID})
	if err == nil || !strings.Contains(err.Error(), lost.Current()) || !strings.Contains(err.Error(), "TOOLGATE_SECRET_KEYS") {
		t.Errorf("a value under an unknown key: %v", err)
	}
}

func TestSecretConfigValuesBecomeTheCredential(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cfg := `{"transport": "streamable-http", "url": "https://mcp.example.test/mcp",
		"headers": {"Authorization": "Bearer moved-secret-1234", "X-Trace": "on"}}`
	src, err := f.sources.Create(ctx, f.org.ID, &f.ws.ID, sources.Input{Name: "Remote", Type: sources.TypeMCP,
		Config: json.RawMessage(cfg), ActorID: f.owner.UserID})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src.Config), "moved-secret") || !strings.Contains(string(src.Config), "X-Trace") {
		t.Errorf("stored configuration: %s", src.Config)
	}
	a, err := f.svc.ForDiscovery(ctx, src)
	if err != nil || a.Headers["Authorization"] != "Bearer moved-secret-1234" {
		t.Fatalf("discovery auth: %v %v", a, err)
	}
	// A later edit adds to the same credential.
	edited := json.RawMessage(`{"transport": "streamable-http", "url": "https://mcp.example.test/mcp",
		"headers": {"X-Api-Key": "second-secret-5678", "X-Trace": "on"}}`)
	if _, err := f.sources.Update(ctx, src, sources.Patch{Config: edited, ActorID: f.owner.UserID}); err != nil {
		t.Fatal(err)
	}
	a, _ = f.svc.ForDiscovery(ctx, src)
	if a.Headers["Authorization"] != "Bearer moved-secret-1234" || a.Headers["X-Api-Key"] != "second-secret-5678" {
		t.Errorf("merged headers: %v", a.Headers)
	}
	list, _ := f.svc.List(ctx, f.inWS(f.ws), f.owner, credentials.ScopeWorkspace, src.ID)
	if len(list) != 1 || credentials.AuthOf(list[0]).Describe() != "Authorization, X-Api-Key" || list[0].CreatedByName == nil {
		t.Fatalf("the source's credentials: %+v", list)
	}

	// Where the source's credential is of another type, the edit is refused
	// and nothing changes.
	f.create(f.inOrg(), f.owner, f.orgSrc, credentials.ScopeOrganization, "org-bearer-token")
	orgMCP, err := f.sources.Create(ctx, f.org.ID, nil, sources.Input{Name: "Org remote", Type: sources.TypeMCP, Scope: sources.ScopeOrganization,
		Config: json.RawMessage(`{"transport": "sse", "url": "https://mcp.example.test/sse"}`), ActorID: f.owner.UserID})
	if err != nil {
		t.Fatal(err)
	}
	f.create(f.inOrg(), f.owner, orgMCP, credentials.ScopeOrganization, "org-mcp-bearer")
	_, err = f.sources.Update(ctx, orgMCP, sources.Patch{ActorID: f.owner.UserID,
		Config: json.RawMessage(`{"transport": "sse", "url": "https://mcp.example.test/sse", "headers": {"X-Auth-Token": "refused-secret"}}`)})
	var fields validation.Errors
	if !errors.As(err, &fields) || !strings.Contains(fields["config.headers"], "bearer token") {
		t.Errorf("a secret header over a bearer credential: %v", err)
	}
	after, _ := f.store.Source(ctx, f.org.ID, orgMCP.ID)
	if string(after.Config) != string(orgMCP.Config) {
		t.Errorf("the refused edit changed the source: %s", after.Config)
	}

	// The import moves env secrets of a stdio server the same way.
	res, err := f.sources.Import(ctx, f.org.ID, &f.ws.ID, f.owner.UserID, []byte(`{"mcpServers": {"files": {
		"command": "npx", "args": ["-y", "server-files"], "env": {"GITHUB_TOKEN": "ghp_imported_secret", "LOG_LEVEL": "debug"}}}}`))
	if err != nil || res.Created["files"] == "" {
		t.Fatalf("import: %+v %v", res, err)
	}
	imported, _ := f.store.Source(ctx, f.org.ID, res.Created["files"])
	if strings.Contains(string(imported.Config), "ghp_imported") || !strings.Contains(string(imported.Config), "LOG_LEVEL") {
		t.Errorf("imported configuration: %s", imported.Config)
	}
	a, _ = f.svc.ForDiscovery(ctx, imported)
	if a.Env["GITHUB_TOKEN"] != "ghp_imported_secret" {
		t.Errorf("imported env credential: %+v", a)
	}
	events, _ := f.store.AuditEvents(ctx, f.org.ID, 100)
	for _, e := range events {
		if strings.Contains(string(e.Details), "secret") && strings.Contains(string(e.Details), "ghp_") {
			t.Errorf("audit row carries a secret: %s", e.Details)
		}
	}
}
