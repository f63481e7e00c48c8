package db_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fixture is a database of its own with rows made by plain SQL.
type fixture struct {
	t     *testing.T
	store *db.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store, err := db.Open(context.Background(), testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return &fixture{t: t, store: store}
}

// id runs a statement that returns one id.
func (f *fixture) id(query string, args ...any) int64 {
	f.t.Helper()
	var id int64
	if err := f.store.Pool().QueryRow(context.Background(), query, args...).Scan(&id); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
	return id
}

// exec runs a statement.
func (f *fixture) exec(query string, args ...any) {
	f.t.Helper()
	if _, err := f.store.Pool().Exec(context.Background(), query, args...); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

func (f *fixture) user() int64 {
	return f.id(`INSERT INTO users (email, password_hash) VALUES ($1, 'x') RETURNING id`, rand.Text()+"@example.test")
}

func (f *fixture) org() int64 {
	return f.id(`INSERT INTO organizations (slug, name) VALUES (lower($1), 'Org') RETURNING id`, rand.Text()[:12])
}

func (f *fixture) workspace(org int64) int64 {
	return f.id(`INSERT INTO workspaces (org_id, slug, name) VALUES ($1, lower($2), $2) RETURNING id`, org, rand.Text()[:12])
}

func (f *fixture) key(org, ws, user int64) int64 {
	return f.id(`INSERT INTO api_keys (org_id, workspace_id, user_id, name, prefix, key_hash)
		VALUES ($1, $2, $3, 'agent', 'tgk_test', $4) RETURNING id`, org, ws, user, []byte(rand.Text()))
}
