package db

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
)

// ErrInvitationUsed: the invitation was accepted, revoked or has expired.
var ErrInvitationUsed = errors.New("this invitation was already used, revoked or has expired")

// Invitation asks someone by email to join an organization.
type Invitation struct {
	ID         int64      `db:"id" json:"id"`
	OrgID      int64      `db:"org_id" json:"-"`
	OrgSlug    string     `db:"org_slug" json:"-"`
	OrgName    string     `db:"org_name" json:"-"`
	Email      string     `db:"email" json:"email"`
	Role       string     `db:"role" json:"role"`
	InvitedBy  string     `db:"invited_by" json:"invited_by"`
	CreatedAt  time.Time  `db:"created_at" json:"created_at"`
	ExpiresAt  time.Time  `db:"expires_at" json:"expires_at"`
	AcceptedAt *time.Time `db:"accepted_at" json:"accepted_at"`
	RevokedAt  *time.Time `db:"revoked_at" json:"revoked_at"`
}

// Pending reports whether the invitation can still be accepted at now.
func (i Invitation) Pending(now time.Time) bool {
	return i.AcceptedAt == nil && i.RevokedAt == nil && now.Before(i.ExpiresAt)
}

const invitationSelect = `SELECT i.id, i.org_id, o.slug AS org_slug, o.name AS org_name, i.email, i.role,
	COALESCE(u.email, '') AS invited_by, i.created_at, i.expires_at, i.accepted_at, i.revoked_at
	FROM invitations i JOIN organizations o ON o.id = i.org_id LEFT JOIN users u ON u.id = i.invited_by`

// CreateInvitation stores an invitation under the hash of its token.
func (s *Store) CreateInvitation(ctx context.Context, orgID int64, email, role string, tokenHash []byte, invitedBy int64, expiresAt time.Time) (Invitation, error) {
	var id int64
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &id, `INSERT INTO invitations (org_id, email, role, token_hash, invited_by, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, orgID, email, role, tokenHash, invitedBy, expiresAt); err != nil {
			return translate(err)
		}
		return addAudit(ctx, tx, memberAudit(orgID, invitedBy, "member.invited", "invitation", id, map[string]any{"email": email, "role": role}))
	})
	if err != nil {
		return Invitation{}, err
	}
	return s.Invitation(ctx, orgID, id)
}

// Invitation loads one of an organization's invitations.
func (s *Store) Invitation(ctx context.Context, orgID, id int64) (Invitation, error) {
	var inv Invitation
	err := s.db.GetContext(ctx, &inv, invitationSelect+` WHERE i.org_id = $1 AND i.id = $2`, orgID, id)
	return inv, translate(err)
}

// PendingInvitations lists invitations that can still be accepted, newest first.
func (s *Store) PendingInvitations(ctx context.Context, orgID int64) ([]Invitation, error) {
	invs := []Invitation{}
	err := s.db.SelectContext(ctx, &invs, invitationSelect+` WHERE i.org_id = $1
		AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
		ORDER BY i.created_at DESC`, orgID)
	return invs, err
}

// PendingInvitationFor reports whether email already has a pending invitation.
func (s *Store) PendingInvitationFor(ctx context.Context, orgID int64, email string) (bool, error) {
	var exists bool
	err := s.db.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM invitations WHERE org_id = $1
		AND lower(email) = lower($2) AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now())`, orgID, email)
	return exists, err
}

// InvitationByToken loads an invitation by the hash of its token.
func (s *Store) InvitationByToken(ctx context.Context, tokenHash []byte) (Invitation, error) {
	var inv Invitation
	err := s.db.GetContext(ctx, &inv, invitationSelect+` WHERE i.token_hash = $1`, tokenHash)
	return inv, translate(err)
}

// RevokeInvitation withdraws a pending invitation.
func (s *Store) RevokeInvitation(ctx context.Context, orgID, id, actorID int64) error {
	return s.InTx(ctx, func(tx *sqlx.Tx) error {
		var email, role string
		err := tx.QueryRowxContext(ctx, `UPDATE invitations SET revoked_at = now()
			WHERE org_id = $1 AND id = $2 AND accepted_at IS NULL AND revoked_at IS NULL RETURNING email, role`, orgID, id).Scan(&email, &role)
		if err != nil {
			return translate(err)
		}
		return addAudit(ctx, tx, memberAudit(orgID, actorID, "member.invitation_revoked", "invitation", id, map[string]any{"email": email, "role": role}))
	})
}

// AcceptInvitation marks the invitation used by userID and adds the
// membership, in one transaction, so a token works exactly once.
func AcceptInvitation(ctx context.Context, tx *sqlx.Tx, inv Invitation, userID int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE invitations SET accepted_at = now(), accepted_by = $2
		WHERE id = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()`, inv.ID, userID)
	if err := oneRow(res, err); errors.Is(err, ErrNotFound) {
		return ErrInvitationUsed
	} else if err != nil {
		return err
	}
	if err := AddMember(ctx, tx, inv.OrgID, userID, inv.Role); err != nil {
		return err
	}
	return addAudit(ctx, tx, memberAudit(inv.OrgID, userID, "member.joined", "user", userID, map[string]any{"email": inv.Email, "role": inv.Role}))
}

// memberAudit is a membership's audit event: who, and with which role.
func memberAudit(orgID, actorID int64, action, targetType string, targetID int64, details map[string]any) AuditEvent {
	return auditEvent(orgID, nil, actorID, action, targetType, strconv.FormatInt(targetID, 10), details)
}
