package testenv

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestDatabaseURLIsolation(t *testing.T) {
	t.Parallel()
	urlA, urlB := DatabaseURL(t), DatabaseURL(t)
	if urlA == urlB {
		t.Fatalf("two calls returned the same URL %s", urlA)
	}
	a, b := connect(t, urlA), connect(t, urlB)
	if nameOf(t, a) == nameOf(t, b) {
		t.Fatalf("both URLs reach database %s", nameOf(t, a))
	}
	const users = "SELECT count(*) FROM users" // the table comes from the migrations
	beforeA, beforeB := count(t, a, users), count(t, b, users)
	_, err := a.Exec(t.Context(), `INSERT INTO users (email, password_hash) VALUES ('isolation@example.com', 'x')`)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	if n := count(t, a, users); n != beforeA+1 {
		t.Errorf("users where the row was written: %d, want %d", n, beforeA+1)
	}
	if n := count(t, b, users); n != beforeB {
		t.Errorf("users in the other database: %d, want %d", n, beforeB)
	}
}

func TestDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("uses a database", func(t *testing.T) {
		conn := connect(t, DatabaseURL(t))
		name = nameOf(t, conn)
		conn.Close(t.Context())
	})
	pg, err := postgresService()
	if err != nil {
		t.Fatal(err)
	}
	var exists bool
	err = pg.admin.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil || exists {
		t.Errorf("database %s after its test ended: exists=%v, err=%v; want it dropped", name, exists, err)
	}
}

func TestMeili(t *testing.T) {
	t.Parallel()
	url, key := Meili(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/version", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /version with the key: status %d, want 200", resp.StatusCode)
	}
}

func TestRepoRoot(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(RepoRoot(t), "go.mod")); err != nil {
		t.Errorf("RepoRoot has no go.mod: %v", err)
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func nameOf(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var name string
	if err := conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatalf("current_database: %v", err)
	}
	return name
}

func count(t *testing.T, conn *pgx.Conn, query string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(t.Context(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestDatabaseURLParallel clones the template from many tests at once, as
// parallel tests do.
func TestDatabaseURLParallel(t *testing.T) {
	t.Parallel()
	for i := range 8 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			conn := connect(t, DatabaseURL(t))
			count(t, conn, "SELECT count(*) FROM users")
		})
	}
}
