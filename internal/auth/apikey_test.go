package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// keyFixture is an organization with an owner, a member and a workspace.
type keyFixture struct {
	// url is the test's database, for a second connection to it.
	url           string
	store         *db.Store
	authn         *auth.Authenticator
	ten           *tenancy.Service
	org           db.Organization
	ws            db.Workspace
	owner, member db.User
}

func newKeyFixture(t *testing.T) *keyFixture {
	t.Helper()
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	store, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	f := &keyFixture{url: url, store: store, authn: &auth.Authenticator{Store: store}, ten: &tenancy.Service{Store: store}}
	owner, org, err := f.ten.CreateAccount(ctx, "owner@keys.test", "Owner", "correct horse battery", "Keys")
	if err != nil {
		t.Fatal(err)
	}
	f.owner, f.org = owner, *org
	if f.member, _, err = f.ten.CreateAccount(ctx, "member@keys.test", "", "correct horse battery", ""); err != nil {
		t.Fatal(err)
	}
	if err := store.InTx(ctx, func(tx *sqlx.Tx) error { return db.AddMember(ctx, tx, f.org.ID, f.member.ID, "member") }); err != nil {
		t.Fatal(err)
	}
	if f.ws, err = store.WorkspaceBySlug(ctx, f.org.ID, "default"); err != nil {
		t.Fatal(err)
	}
	return f
}

// key creates a key as u, a member of role.
func (f *keyFixture) key(t *testing.T, u db.User, role auth.Role, in tenancy.APIKeyInput) (db.APIKey, string) {
	t.Helper()
	k, plain, err := f.ten.CreateAPIKey(context.Background(), f.ws, u, role, in)
	if err != nil {
		t.Fatal(err)
	}
	return k, plain
}

func TestAPIKeyAuthenticates(t *testing.T) {
	f := newKeyFixture(t)
	ctx := context.Background()
	k, plain := f.key(t, f.member, auth.Member, tenancy.APIKeyInput{Name: "agent", Mode: "direct"})
	g, err := f.authn.APIKey(ctx, plain)
	if err != nil {
		t.Fatalf("live key refused: %v", err)
	}
	if g.Key.ID != k.ID || g.Key.Mode != "direct" || g.User.ID != f.member.ID || g.Org.ID != f.org.ID ||
		g.Workspace.ID != f.ws.ID || g.Role != "member" {
		t.Fatalf("grant = %+v", g)
	}
	if g.Key.LastUsedAt != nil {
		t.Fatalf("first use reports an earlier use: %v", g.Key.LastUsedAt)
	}
	var lastUsed *time.Time
	if err := f.store.DB().QueryRowContext(ctx, `SELECT last_used_at FROM api_keys WHERE id = $1`, k.ID).Scan(&lastUsed); err != nil || lastUsed == nil {
		t.Fatalf("last_used_at not recorded: %v %v", lastUsed, err)
	}

	// The role is the owner's role now, not when the key was made.
	if _, err := f.store.SetRole(ctx, f.org.ID, f.member.ID, "viewer", 0); err != nil {
		t.Fatal(err)
	}
	if g, err = f.authn.APIKey(ctx, plain); err != nil || g.Role != "viewer" {
		t.Fatalf("after demotion: role %q, err %v", g.Role, err)
	}
}

func TestAPIKeyRefused(t *testing.T) {
	f := newKeyFixture(t)
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := f.store.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	revoked, revokedPlain := f.key(t, f.owner, auth.Owner, tenancy.APIKeyInput{Name: "revoked"})
	if _, err := f.authn.APIKey(ctx, revokedPlain); err != nil {
		t.Fatalf("live key refused: %v", err)
	}
	if err := f.ten.RevokeAPIKey(ctx, f.ws, f.owner, auth.Owner, revoked.ID); err != nil {
		t.Fatal(err)
	}
	expired, expiredPlain := f.key(t, f.owner, auth.Owner, tenancy.APIKeyInput{Name: "expired", ExpiresInDays: 1})
	exec(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, expired.ID)
	_, leaverPlain := f.key(t, f.member, auth.Member, tenancy.APIKeyInput{Name: "leaver"})
	if err := f.store.RemoveMember(ctx, f.org.ID, f.member.ID, 0); err != nil {
		t.Fatal(err)
	}
	made, _, _ := auth.NewSecret(auth.APIKeyPrefix)
	token, _, _ := auth.NewSecret(auth.PersonalTokenPrefix)
	for name, bearer := range map[string]string{
		"revoked": revokedPlain, "expired": expiredPlain, "owner left the organization": leaverPlain,
		"made up": made, "a personal token": token, "empty": "", "prefix only": auth.APIKeyPrefix,
		"without its prefix": revokedPlain[len(auth.APIKeyPrefix):],
	} {
		if _, err := f.authn.APIKey(ctx, bearer); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want ErrUnauthenticated", name, err)
		}
	}
}
