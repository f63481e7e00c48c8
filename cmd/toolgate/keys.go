package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/secrets"
)

// keys runs `toolgate keys generate` and `toolgate keys rotate`.
func keys(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "generate":
		entry, err := secrets.NewKeyEntry()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, entry)
		return nil
	case "rotate":
		return rotateKeys(ctx, args[1:], stdout, stderr, getenv)
	}
	fmt.Fprintf(stderr, "toolgate: unknown keys command %q\n\n%s", args[0], usage)
	return errUsage
}

// rotateKeys re-encrypts every credential under the current key; with
// --new-key it first puts a fresh key at the head of the embedded key file.
func rotateKeys(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("keys rotate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	newKey := fs.Bool("new-key", false, "add a fresh current key to the data directory's key file first (embedded default)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return errUsage
	}
	a, err := open(ctx, stderr, getenv, false, true)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	if *newKey {
		if a.cfg.SecretKeys != "" {
			return errors.New("--new-key edits the data directory's key file, but TOOLGATE_SECRET_KEYS is set: put a new entry from `toolgate keys generate` first in it instead, then run `toolgate keys rotate`")
		}
		id, err := secrets.PrependToFile(a.keyFile())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Added key %s to %s; it is now current.\n", id, a.keyFile())
		if err := a.loadKeys(); err != nil {
			return err
		}
	}
	rep, err := credentials.Rotate(ctx, a.store, a.keys, nil)
	fmt.Fprintf(stdout, "Re-encrypted %d credential(s) under key %s.\n", rep.Resealed, a.keys.Current())
	for _, f := range rep.Failed {
		fmt.Fprintf(stdout, "  not re-encrypted: credential %s\n", f)
	}
	if err != nil {
		return fmt.Errorf("rotation stopped (run it again to finish): %w", err)
	}
	counts, err := a.store.CountCredentialsByKey(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(stdout, "  key %s: %d credential(s)\n", id, counts[id])
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("%d credential(s) could not be re-encrypted: add the keys they name back, or replace their values", len(rep.Failed))
	}
	for _, id := range a.keys.IDs()[1:] {
		if counts[id] == 0 {
			fmt.Fprintf(stdout, "No credential uses key %s any more; it can be removed from the key ring.\n", id)
		}
	}
	return nil
}
