package credentials

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/secrets"
)

// RotateReport says what a rotation did.
type RotateReport struct {
	// Resealed counts values now under the current key.
	Resealed int
	// Failed names the values that could not be opened, and why.
	Failed []string
}

// rotateBatch is how many values one read of a rotation takes.
const rotateBatch = 100

// Rotate seals every credential not under the ring's current key again
// under it. Each value is rewritten on its own and only if unchanged since
// it was read, so an interrupted rotation is simply run again. A value
// under a key the ring lacks is reported, not fatal; progress, when set,
// is told after each value.
func Rotate(ctx context.Context, store *db.Store, ring *secrets.Ring, progress func(RotateReport)) (RotateReport, error) {
	var rep RotateReport
	skip := []string{}
	for {
		batch, err := store.CredentialsNotUnder(ctx, ring.Current(), skip, rotateBatch)
		if err != nil {
			return rep, err
		}
		if len(batch) == 0 {
			return rep, nil
		}
		for _, c := range batch {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			ad := associatedData(c.OrgID, c.ID)
			plain, err := ring.Open(secrets.Sealed{KeyID: c.KeyID, Nonce: c.Nonce, Ciphertext: c.Ciphertext}, ad)
			if err != nil {
				skip = append(skip, c.ID)
				why := "does not open: changed or sealed under another key with the same id"
				if errors.Is(err, secrets.ErrUnknownKey) {
					why = fmt.Sprintf("is under key %q, which the key ring does not hold", c.KeyID)
				}
				rep.Failed = append(rep.Failed, c.ID+" "+why)
				continue
			}
			sealed, err := ring.Seal(plain, ad)
			if err != nil {
				return rep, err
			}
			ok, err := store.Reseal(ctx, c, sealed.KeyID, sealed.Nonce, sealed.Ciphertext)
			if err != nil {
				return rep, err
			}
			if ok {
				rep.Resealed++
			} else {
				// Replaced meanwhile, so already under the current key.
				skip = append(skip, c.ID)
			}
			if progress != nil {
				progress(rep)
			}
		}
	}
}
