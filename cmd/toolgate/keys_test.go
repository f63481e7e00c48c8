package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/worker"
)

// TestKeysRotate seals credentials under one key, puts a new key first
// and runs `toolgate keys rotate`: afterwards the new key alone opens them.
func TestKeysRotate(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	oldKey, newKey := testKeys(t), testKeys(t)
	vars := map[string]string{"DATABASE_URL": dbURL, "TOOLGATE_DATA_DIR": t.TempDir(), "TOOLGATE_SECRET_KEYS": oldKey}
	getenv := func(k string) string { return vars[k] }

	store, err := db.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	q, err := worker.NewQueue(store)
	if err != nil {
		t.Fatal(err)
	}
	ring, _ := secrets.ParseRing(oldKey)
	srcs := &sources.Service{Store: store, Refresher: q}
	svc := &credentials.Service{Store: store, Ring: ring, Refresher: q, Sources: srcs}
	srcs.Credentials = svc
	u, org, err := (&tenancy.Service{Store: store}).CreateAccount(ctx, "keys-"+strings.ToLower(rand.Text()[:8])+"@example.test", "", "correct horse battery", "Keys")
	if err != nil {
		t.Fatal(err)
	}
	src, err := srcs.Create(ctx, org.ID, nil, sources.Input{Name: "Spec", Type: sources.TypeOpenAPI, Scope: sources.ScopeOrganization,
		Config: json.RawMessage(`{"spec": {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	owner := credentials.Actor{UserID: u.ID, Role: auth.Owner}
	if _, err := svc.Create(ctx, credentials.Place{OrgID: org.ID}, owner, credentials.Input{SourceID: src.ID,
		Auth: credentials.Auth{Type: credentials.TypeBearer}, Secret: &credentials.Secret{Value: "rotated-token"}}); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"keys", "generate"}, strings.NewReader(""), &out, &errOut, getenv); code != 0 {
		t.Fatalf("keys generate: exit %d %s", code, errOut.String())
	}
	if _, err := secrets.ParseRing(out.String()); err != nil {
		t.Errorf("keys generate printed %q: %v", out.String(), err)
	}

	// --new-key edits only the embedded key file.
	out.Reset()
	errOut.Reset()
	if code := run(ctx, []string{"keys", "rotate", "--new-key"}, strings.NewReader(""), &out, &errOut, getenv); code != 1 || !strings.Contains(errOut.String(), "TOOLGATE_SECRET_KEYS is set") {
		t.Errorf("--new-key with TOOLGATE_SECRET_KEYS: exit %d %s", code, errOut.String())
	}

	vars["TOOLGATE_SECRET_KEYS"] = newKey + "," + oldKey
	out.Reset()
	errOut.Reset()
	if code := run(ctx, []string{"keys", "rotate"}, strings.NewReader(""), &out, &errOut, getenv); code != 0 {
		t.Fatalf("keys rotate: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	oldID, _, _ := strings.Cut(oldKey, ":")
	if !strings.Contains(out.String(), "Re-encrypted") || !strings.Contains(out.String(), "No credential uses key "+oldID) {
		t.Errorf("keys rotate printed:\n%s", out.String())
	}
	svc.Ring, _ = secrets.ParseRing(newKey)
	a, err := svc.ForDiscovery(ctx, src)
	if err != nil || a.Headers["Authorization"] != "Bearer rotated-token" {
		t.Errorf("after rotation with the new key alone: %v %v", a, err)
	}

	// Without keys and with an external database, commands that need them refuse.
	delete(vars, "TOOLGATE_SECRET_KEYS")
	errOut.Reset()
	if code := run(ctx, []string{"keys", "rotate"}, strings.NewReader(""), &out, &errOut, getenv); code != 1 || !strings.Contains(errOut.String(), "TOOLGATE_SECRET_KEYS is required") {
		t.Errorf("no keys: exit %d %s", code, errOut.String())
	}
	vars["TOOLGATE_SECRET_KEYS"] = "k1:not-a-key"
	errOut.Reset()
	if code := run(ctx, []string{"keys", "rotate"}, strings.NewReader(""), &out, &errOut, getenv); code != 1 || !strings.Contains(errOut.String(), "TOOLGATE_SECRET_KEYS") {
		t.Errorf("a bad key: exit %d %s", code, errOut.String())
	}
}
