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

	"github.com/toolgate/toolgate/internal/tenancy"
)

// seedDemo creates the demo organization once and prints how to sign in.
// Its generated password lives in the data directory, readable only by its owner.
func seedDemo(ctx context.Context, a *app, stdout io.Writer) error {
	file := filepath.Join(a.cfg.DataDir, "demo-password")
	pw, err := os.ReadFile(file)
	password := strings.TrimSpace(string(pw))
	if errors.Is(err, os.ErrNotExist) || password == "" {
		password = randomPassword()
		if err := os.MkdirAll(a.cfg.DataDir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, []byte(password+"\n"), 0o600); err != nil {
			return fmt.Errorf("save demo password: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("read demo password: %w", err)
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

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
