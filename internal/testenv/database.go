package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/embedded"
)

// templateLockKey is the advisory lock under which test processes sharing a
// server create the template database (any constant, the same everywhere).
const templateLockKey = 0x746f6f6c67617465 // "toolgate"

// DatabaseURL returns the URL of a fresh database for this test, cloned from
// the migrated template and dropped (WITH (FORCE)) when the test ends.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	pg, err := postgresService()
	if err != nil {
		t.Fatalf("testenv: postgresql: %v", err)
	}
	name := databaseName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", ident(name), ident(pg.template))
	if _, err := pg.admin.Exec(ctx, create); err != nil {
		t.Fatalf("testenv: create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := pg.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("testenv: drop test database %s: %v", name, err)
		}
	})
	u, err := withDatabase(pg.url, name)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return u
}

// server is the PostgreSQL the tests use, with the harness's own pool on
// the database its URL names and the template's name.
type server struct {
	url      string
	admin    *pgxpool.Pool
	template string
}

var postgresService = sync.OnceValues(func() (*server, error) {
	url := os.Getenv(envDatabaseURL)
	if url == "" {
		sup, err := startEmbedded("postgres", embedded.Options{Postgres: true})
		if err != nil {
			return nil, err
		}
		url = sup.DatabaseURL()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	atShutdown(func() error { admin.Close(); return nil })
	template, err := ensureTemplate(ctx, admin, url)
	if err != nil {
		return nil, err
	}
	return &server{url: url, admin: admin, template: template}, nil
})

// ensureTemplate makes the migrated template database unless a process
// sharing the server already has. Its name carries a hash of the migration
// files, so changed migrations get a new template. Nobody connects to it
// once it is made, as CREATE DATABASE ... TEMPLATE requires.
func ensureTemplate(ctx context.Context, admin *pgxpool.Pool, serverURL string) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "toolgate_template_" + sum[:16]
	conn, err := admin.Acquire(ctx)
	if err != nil {
		return "", fmt.Errorf("connect to postgresql: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(templateLockKey)); err != nil {
		return "", fmt.Errorf("lock template: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", int64(templateLockKey))

	var isTemplate bool
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&isTemplate)
	switch {
	case err == nil && isTemplate:
		return name, nil
	case err == nil: // left unfinished by a process that died
		if _, err := conn.Exec(ctx, "DROP DATABASE "+ident(name)+" WITH (FORCE)"); err != nil {
			return "", fmt.Errorf("drop unfinished template: %w", err)
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return "", fmt.Errorf("look up template: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(name)); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	if err := migrate(ctx, serverURL, name); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return "", fmt.Errorf("mark template: %w", err)
	}
	return name, nil
}

// migrate applies the migrations to a database and closes every connection.
func migrate(ctx context.Context, serverURL, database string) error {
	u, err := withDatabase(serverURL, database)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return fmt.Errorf("open template: %w", err)
	}
	defer pool.Close()
	if err := db.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	return nil
}

// migrationsHash is a hex sha256 of the migration files' names and contents.
func migrationsHash() (string, error) {
	h := sha256.New()
	migrations := db.Migrations()
	err := fs.WalkDir(migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := migrations.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", path)
		_, err = io.Copy(h, f)
		h.Write([]byte{0})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// withDatabase returns a postgres:// URL with its database replaced.
func withDatabase(serverURL, database string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s must be a postgres:// URL", envDatabaseURL)
	}
	u.Path = "/" + database
	u.RawPath = ""
	return u.String(), nil
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9]+`)

// databaseName is a unique database name that still says which test it
// belongs to: test_<part of the test name>_<random>.
func databaseName(testName string) string {
	slug := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(testName), "_"), "_")
	if len(slug) > 40 {
		slug = slug[:40]
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	return "test_" + slug + "_" + hex.EncodeToString(suffix)
}

// ident quotes a PostgreSQL identifier.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }
