package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/views/connect"
)

// seedDemo creates the demo organization once and prints how to sign in.
// Its generated password lives in the data directory, readable only by its owner.
func seedDemo(ctx context.Context, a *app, stdout io.Writer) error {
	file := filepath.Join(a.cfg.DataDir, "demo-password")
	password, err := readDemoFile(file)
	if err != nil {
		return fmt.Errorf("read demo password: %w", err)
	}
	if password == "" {
		password = randomPassword()
		if err := writeDemoFile(file, password); err != nil {
			return fmt.Errorf("save demo password: %w", err)
		}
	}
	svc := &tenancy.Service{Store: a.store, Signup: a.cfg.Signup}
	created, err := svc.SeedDemo(ctx, password)
	if err != nil {
		return fmt.Errorf("seed demo organization: %w", err)
	}
	if created {
		a.log.Info("seeded demo organization", "org", tenancy.DemoOrgName, "email", tenancy.DemoEmail)
	}
	fmt.Fprintf(stdout, "\n  Console:  %s\n  Sign in:  %s\n  Password: %s   (kept in %s)\n\n",
		a.cfg.BaseURL.String(), tenancy.DemoEmail, password, file)
	return nil
}

// seedDemoAgent runs once the server listens, on a demo instance: it gives
// the demo workspace an API key (kept in the data directory, so every start
// prints the same one) and toolgate's own API as a source with a credential,
// then prints how an agent connects. Discovery of that source reads the
// spec from this server, hence after listening. A failure is logged: the
// console still serves.
func seedDemoAgent(ctx context.Context, a *app, q sources.Refresher, stdout io.Writer) {
	if !a.cfg.Demo {
		return
	}
	if err := demoAgent(ctx, a, q, stdout); err != nil {
		a.log.Error("seed the demo agent's key and source", "error", err.Error())
	}
}

func demoAgent(ctx context.Context, a *app, q sources.Refresher, stdout io.Writer) error {
	svc := &tenancy.Service{Store: a.store, Signup: a.cfg.Signup}
	place, err := svc.DemoPlace(ctx)
	if err != nil {
		return err
	}
	file := filepath.Join(a.cfg.DataDir, "demo-api-key")
	saved, err := readDemoFile(file)
	if err != nil {
		return fmt.Errorf("read demo API key: %w", err)
	}
	key, created, err := svc.EnsureDemoAPIKey(ctx, place, saved)
	if err != nil {
		return err
	}
	if created {
		if err := writeDemoFile(file, key); err != nil {
			return fmt.Errorf("save demo API key: %w", err)
		}
		a.log.Info("created the demo API key", "org", place.Org.Slug, "workspace", place.Workspace.Slug)
	}

	creds := a.credentials(q)
	srcs := &sources.Service{Store: a.store, Rules: sources.Rules{AllowStdio: a.cfg.AllowStdio}, Refresher: q, Credentials: creds}
	creds.Sources = srcs
	base := a.cfg.BaseURL.String()
	src, seeded, err := svc.EnsureDemoSource(ctx, place, srcs, creds, base)
	if err != nil {
		return err
	}
	if seeded.Source || seeded.Credential {
		a.log.Info("seeded the demo source", "source", src.ID, "name", src.Name, "source_created", seeded.Source,
			"credential_created", seeded.Credential)
	}
	mcpURL := base + "/mcp"
	fmt.Fprintf(stdout, "  MCP URL:  %s\n  API key:  %s   (kept in %s)\n  Claude Code:\n    %s\n\n",
		mcpURL, key, file, connect.ClaudeCode(mcpURL, key))
	return nil
}

// readDemoFile reads a demo secret kept in the data directory; a missing
// file reads as "".
func readDemoFile(file string) (string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

// writeDemoFile keeps a demo secret in the data directory, readable only by
// its owner.
func writeDemoFile(file, value string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file, []byte(value+"\n"), 0o600); err != nil {
		return err
	}
	return os.Chmod(file, 0o600)
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
