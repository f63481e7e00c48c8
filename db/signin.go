package db

import (
	"context"
	"time"
)

// RecordSigninFailure remembers a failed sign-in for throttling.
func (s *Store) RecordSigninFailure(ctx context.Context, email, clientIP string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO signin_failures (email, client_ip) VALUES (lower($1), $2)`, email, clientIP)
	return err
}

// SigninFailures counts failures since a time, for the account and for the
// client address, and returns the oldest of them that still counts.
func (s *Store) SigninFailures(ctx context.Context, email, clientIP string, since time.Time) (byEmail, byIP int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE email = lower($1)),
		count(*) FILTER (WHERE client_ip = $2)
		FROM signin_failures WHERE failed_at > $3 AND (email = lower($1) OR client_ip = $2)`,
		email, clientIP, since).Scan(&byEmail, &byIP)
	return byEmail, byIP, err
}

// ClearSigninFailures forgets an account's failures after a good sign-in and
// drops failures too old to matter.
func (s *Store) ClearSigninFailures(ctx context.Context, email string, before time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM signin_failures WHERE email = lower($1) OR failed_at < $2`, email, before)
	return err
}
