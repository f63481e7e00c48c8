package db

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// User is an account.
type User struct {
	ID           int64  `db:"id" json:"id"`
	Email        string `db:"email" json:"email"`
	Name         string `db:"name" json:"name"`
	PasswordHash string `db:"password_hash" json:"-"`
	// SessionGeneration is the generation a console session must have
	// begun in to be valid; see SetPasswordHash.
	SessionGeneration int64     `db:"session_generation" json:"-"`
	CreatedAt         time.Time `db:"created_at" json:"created_at"`
	UpdatedAt         time.Time `db:"updated_at" json:"updated_at"`
}

const userColumns = `id, email, name, password_hash, session_generation, created_at, updated_at`

// CountUsers reports how many accounts exist; zero means a fresh instance.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, `SELECT count(*) FROM users`)
	return n, err
}

// CreateUser inserts an account; a taken email is ErrConflict.
func CreateUser(ctx context.Context, q sqlx.QueryerContext, email, name, passwordHash string) (User, error) {
	var u User
	err := sqlx.GetContext(ctx, q, &u, `INSERT INTO users (email, name, password_hash)
		VALUES ($1, $2, $3) RETURNING `+userColumns, email, name, passwordHash)
	return u, translate(err)
}

// UserByID loads an account.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	var u User
	err := s.db.GetContext(ctx, &u, `SELECT `+userColumns+` FROM users WHERE id = $1`, id)
	return u, translate(err)
}

// UserByEmail loads an account by email, ignoring case.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	var u User
	err := s.db.GetContext(ctx, &u, `SELECT `+userColumns+` FROM users WHERE lower(email) = lower($1)`, email)
	return u, translate(err)
}

// UpdateProfile changes an account's name and email.
func (s *Store) UpdateProfile(ctx context.Context, id int64, email, name string) (User, error) {
	var u User
	err := s.db.GetContext(ctx, &u, `UPDATE users SET email = $2, name = $3, updated_at = now()
		WHERE id = $1 RETURNING `+userColumns, id, email, name)
	return u, translate(err)
}

// EndSessions raises an account's session generation, which ends the
// console sessions begun before, and returns the new generation.
func (s *Store) EndSessions(ctx context.Context, id int64) (generation int64, err error) {
	err = s.db.GetContext(ctx, &generation, `
		UPDATE users SET session_generation = session_generation + 1 WHERE id = $1 RETURNING session_generation`, id)
	return generation, translate(err)
}

// SetPasswordHash replaces an account's password hash and raises its
// session generation, which ends the console sessions begun before; it
// returns the new generation, for the session that made the change to keep.
func (s *Store) SetPasswordHash(ctx context.Context, id int64, hash string) (generation int64, err error) {
	err = s.db.GetContext(ctx, &generation, `
		UPDATE users SET password_hash = $2, session_generation = session_generation + 1, updated_at = now()
		WHERE id = $1 RETURNING session_generation`, id, hash)
	return generation, translate(err)
}
