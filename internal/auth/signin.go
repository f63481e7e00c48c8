package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/db"
)

// ErrBadCredentials is the one answer to a wrong email or a wrong password.
var ErrBadCredentials = errors.New("wrong email or password")

// ErrForbidden: the caller's role does not allow the action.
var ErrForbidden = errors.New("you do not have permission to do that")

// ErrUnauthenticated: no session and no valid token.
var ErrUnauthenticated = errors.New("sign in or send a valid personal access token")

// ThrottledError refuses a sign-in after too many failures.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed sign-ins; try again in %d minutes", int(e.RetryAfter.Round(time.Minute).Minutes()))
}

// Throttle limits failed sign-ins within a sliding window, per account and
// per client address (the latter higher, for offices behind one address).
type Throttle struct {
	Window     time.Duration
	PerAccount int
	PerClient  int
}

// DefaultThrottle allows 5 failures per account and 20 per address in 15 minutes.
var DefaultThrottle = Throttle{Window: 15 * time.Minute, PerAccount: 5, PerClient: 20}

// Authenticator checks passwords and tokens against the store.
type Authenticator struct {
	Store    *db.Store
	Throttle Throttle
}

// SignIn returns the account for email and password, or ErrBadCredentials
// (the same for an unknown email), or a *ThrottledError.
func (a *Authenticator) SignIn(ctx context.Context, email, password, clientIP string) (db.User, error) {
	email = strings.TrimSpace(email)
	since := time.Now().Add(-a.Throttle.Window)
	byEmail, byIP, err := a.Store.SigninFailures(ctx, email, clientIP, since)
	if err != nil {
		return db.User{}, fmt.Errorf("count sign-in failures: %w", err)
	}
	if byEmail >= a.Throttle.PerAccount || byIP >= a.Throttle.PerClient {
		return db.User{}, &ThrottledError{RetryAfter: a.Throttle.Window}
	}
	u, err := a.Store.UserByEmail(ctx, email)
	hash := u.PasswordHash
	if errors.Is(err, db.ErrNotFound) {
		hash = dummyHash
	} else if err != nil {
		return db.User{}, fmt.Errorf("load account: %w", err)
	}
	ok, err := VerifyPassword(hash, password)
	if err != nil && hash != dummyHash {
		return db.User{}, fmt.Errorf("verify password of user %d: %w", u.ID, err)
	}
	if !ok || u.ID == 0 {
		if err := a.Store.RecordSigninFailure(ctx, email, clientIP); err != nil {
			return db.User{}, fmt.Errorf("record sign-in failure: %w", err)
		}
		return db.User{}, ErrBadCredentials
	}
	if err := a.Store.ClearSigninFailures(ctx, email, since); err != nil {
		return db.User{}, fmt.Errorf("clear sign-in failures: %w", err)
	}
	return u, nil
}

// Reauthenticate checks a signed-in user's password again (before changing
// it), counting failures like sign-in does so a stolen session cannot be
// used to guess the password.
func (a *Authenticator) Reauthenticate(ctx context.Context, u db.User, password, clientIP string) error {
	byEmail, byIP, err := a.Store.SigninFailures(ctx, u.Email, clientIP, time.Now().Add(-a.Throttle.Window))
	if err != nil {
		return fmt.Errorf("count sign-in failures: %w", err)
	}
	if byEmail >= a.Throttle.PerAccount || byIP >= a.Throttle.PerClient {
		return &ThrottledError{RetryAfter: a.Throttle.Window}
	}
	ok, err := VerifyPassword(u.PasswordHash, password)
	if err != nil {
		return fmt.Errorf("verify password of user %d: %w", u.ID, err)
	}
	if !ok {
		if err := a.Store.RecordSigninFailure(ctx, u.Email, clientIP); err != nil {
			return fmt.Errorf("record sign-in failure: %w", err)
		}
		return ErrBadCredentials
	}
	return nil
}

// UserByToken returns the owner of a live personal access token.
func (a *Authenticator) UserByToken(ctx context.Context, plain string) (db.User, db.Token, error) {
	if !strings.HasPrefix(plain, PersonalTokenPrefix) {
		return db.User{}, db.Token{}, ErrUnauthenticated
	}
	u, t, err := a.Store.UserByToken(ctx, HashSecret(plain))
	if errors.Is(err, db.ErrNotFound) {
		return db.User{}, db.Token{}, ErrUnauthenticated
	}
	return u, t, err
}
