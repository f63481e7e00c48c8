package auth

import (
	"context"
	"errors"
	"strings"

	"github.com/toolgate/toolgate/db"
)

// APIKey returns the live workspace API key a bearer secret stands for, with
// its organization, workspace, owner and the owner's role there now. A key
// that is unknown, revoked, expired, or whose owner left the organization is
// ErrUnauthenticated; revocation takes effect on the next request.
func (a *Authenticator) APIKey(ctx context.Context, bearer string) (db.APIKeyGrant, error) {
	if !strings.HasPrefix(bearer, APIKeyPrefix) {
		return db.APIKeyGrant{}, ErrUnauthenticated
	}
	g, err := a.Store.APIKeyByHash(ctx, HashSecret(bearer))
	if errors.Is(err, db.ErrNotFound) || err == nil && !Role(g.Role).Valid() {
		return db.APIKeyGrant{}, ErrUnauthenticated
	}
	return g, err
}
