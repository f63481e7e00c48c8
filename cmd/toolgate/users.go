package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/internal/tenancy"
)

func migrate(ctx context.Context, stderr io.Writer, getenv func(string) string) error {
	a, err := open(ctx, stderr, getenv, false, false)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	a.log.Info("migrations applied")
	return nil
}

// users runs `toolgate users create`: how scripts and containers bootstrap.
func users(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "usage: toolgate users create --email E --password-stdin [--name N] [--org NAME] [--token]")
		return errUsage
	}
	fs := flag.NewFlagSet("users create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("email", "", "email address of the account (required)")
	name := fs.String("name", "", "display name")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input (required)")
	org := fs.String("org", "", "also create this organization, owned by the account")
	token := fs.Bool("token", false, "print a new personal access token for the account")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	if *email == "" || !*fromStdin {
		fmt.Fprintln(stderr, "toolgate users create: --email and --password-stdin are required")
		return errUsage
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("read password from stdin: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")

	a, err := open(ctx, stderr, getenv, false, false)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	svc := &tenancy.Service{Store: a.store, Signup: a.cfg.Signup}
	u, o, err := svc.CreateAccount(ctx, *email, *name, password, *org)
	if err != nil {
		return fmt.Errorf("create account: %w", err)
	}
	msg := fmt.Sprintf("created account %s (id %d)", u.Email, u.ID)
	if o != nil {
		msg += fmt.Sprintf(" owning organization %s (%s)", o.Name, o.Slug)
	}
	fmt.Fprintln(stderr, msg)
	if *token {
		_, plain, err := svc.CreateToken(ctx, u.ID, tenancy.TokenInput{Name: "bootstrap"})
		if err != nil {
			return fmt.Errorf("create token: %w", err)
		}
		fmt.Fprintln(stdout, plain)
	}
	return nil
}
