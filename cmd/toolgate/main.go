// Command toolgate is the control plane between AI agents and their tools:
// `toolgate serve` runs the console, the JSON API and (in later parts) the
// MCP endpoint and worker; the other commands administer an instance.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `toolgate: the control plane between AI agents and the tools they call.

Usage:
  toolgate serve [--worker=false]
                              run the console and JSON API, and the worker unless
                              --worker=false (embedded PostgreSQL and Meilisearch
                              unless DATABASE_URL / MEILI_URL are set)
  toolgate worker             run the background worker alone (any number may run)
  toolgate reindex [--org SLUG]
                              rebuild the search index from PostgreSQL
  toolgate migrate            apply database migrations and exit
  toolgate keys generate      print a new key ring entry (id:base64) for TOOLGATE_SECRET_KEYS
  toolgate keys rotate [--new-key]
                              re-encrypt every credential under the current key; safe
                              to interrupt and run again (--new-key: add a fresh key to
                              the embedded default's key file first)
  toolgate users create --email E --password-stdin [--name N] [--org NAME] [--token]
                              create an account (and organization) headlessly
  toolgate version            print the version

Configuration comes from the environment; see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run executes one command and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stdout, stderr, getenv)
	case "worker":
		err = runWorker(ctx, stderr, getenv)
	case "reindex":
		err = reindex(ctx, args[1:], stdout, stderr, getenv)
	case "migrate":
		err = migrate(ctx, stderr, getenv)
	case "keys":
		err = keys(ctx, args[1:], stdout, stderr, getenv)
	case "users":
		err = users(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "toolgate", version)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "toolgate: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, errUsage) {
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "toolgate:", err)
		return 1
	}
	return 0
}

// errUsage means the command line was wrong and usage was printed.
var errUsage = errors.New("usage")
