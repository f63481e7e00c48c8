package db

import (
	"context"
	"time"
)

// Token is a personal access token; only its hash is stored.
type Token struct {
	ID         int64      `db:"id" json:"id"`
	UserID     int64      `db:"user_id" json:"-"`
	Name       string     `db:"name" json:"name"`
	Prefix     string     `db:"prefix" json:"prefix"`
	CreatedAt  time.Time  `db:"created_at" json:"created_at"`
	ExpiresAt  *time.Time `db:"expires_at" json:"expires_at"`
	LastUsedAt *time.Time `db:"last_used_at" json:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at" json:"revoked_at"`
}

const tokenColumns = `id, user_id, name, prefix, created_at, expires_at, last_used_at, revoked_at`

// CreateToken stores a token's hash.
func (s *Store) CreateToken(ctx context.Context, userID int64, name, prefix string, hash []byte, expiresAt *time.Time) (Token, error) {
	var t Token
	err := s.db.GetContext(ctx, &t, `INSERT INTO personal_access_tokens (user_id, name, prefix, token_hash, expires_at)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+tokenColumns, userID, name, prefix, hash, expiresAt)
	return t, translate(err)
}

// Tokens lists a user's tokens that are not revoked, newest first.
func (s *Store) Tokens(ctx context.Context, userID int64) ([]Token, error) {
	ts := []Token{}
	err := s.db.SelectContext(ctx, &ts, `SELECT `+tokenColumns+` FROM personal_access_tokens
		WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id DESC`, userID)
	return ts, err
}

// RevokeToken ends one of a user's tokens at once.
func (s *Store) RevokeToken(ctx context.Context, userID, id int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE personal_access_tokens SET revoked_at = now()
		WHERE user_id = $1 AND id = $2 AND revoked_at IS NULL`, userID, id)
	return oneRow(res, err)
}

// UserByToken finds the owner of a live token and records its use, at most
// once a minute so a busy script does not write on every request.
func (s *Store) UserByToken(ctx context.Context, hash []byte) (User, Token, error) {
	var t Token
	err := s.db.GetContext(ctx, &t, `SELECT `+tokenColumns+` FROM personal_access_tokens
		WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`, hash)
	if err != nil {
		return User{}, Token{}, translate(err)
	}
	if t.LastUsedAt == nil || time.Since(*t.LastUsedAt) > time.Minute {
		if _, err := s.db.ExecContext(ctx, `UPDATE personal_access_tokens SET last_used_at = now() WHERE id = $1`, t.ID); err != nil {
			return User{}, Token{}, err
		}
	}
	u, err := s.UserByID(ctx, t.UserID)
	return u, t, err
}
