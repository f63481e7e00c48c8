package db

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
)

// ErrLastOwner refuses to demote or remove an organization's last owner.
var ErrLastOwner = errors.New("an organization needs at least one owner")

// Organization is a tenant.
type Organization struct {
	ID        int64     `db:"id" json:"id"`
	Slug      string    `db:"slug" json:"slug"`
	Name      string    `db:"name" json:"name"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
	UpdatedAt time.Time `db:"updated_at" json:"updated_at"`
}

// UserOrganization is an organization seen by one of its members.
type UserOrganization struct {
	Organization
	Role string `db:"role" json:"role"`
}

// Member is a user's membership in an organization.
type Member struct {
	UserID   int64     `db:"user_id" json:"user_id"`
	Email    string    `db:"email" json:"email"`
	Name     string    `db:"name" json:"name"`
	Role     string    `db:"role" json:"role"`
	JoinedAt time.Time `db:"created_at" json:"joined_at"`
}

const orgColumns = `o.id, o.slug, o.name, o.created_at, o.updated_at`

// CreateOrganization inserts an organization; a taken slug is ErrConflict.
func CreateOrganization(ctx context.Context, q sqlx.QueryerContext, slug, name string) (Organization, error) {
	var o Organization
	err := sqlx.GetContext(ctx, q, &o, `INSERT INTO organizations AS o (slug, name) VALUES ($1, $2)
		RETURNING `+orgColumns, slug, name)
	return o, translate(err)
}

// AddMember gives a user a role in an organization; an existing member is ErrConflict.
func AddMember(ctx context.Context, q sqlx.ExecerContext, orgID, userID int64, role string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)`, orgID, userID, role)
	return translate(err)
}

// OrganizationSlugTaken reports whether an organization already uses slug.
func (s *Store) OrganizationSlugTaken(ctx context.Context, slug string, exceptID int64) (bool, error) {
	var taken bool
	err := s.db.GetContext(ctx, &taken, `SELECT EXISTS (SELECT 1 FROM organizations WHERE slug = $1 AND id <> $2)`, slug, exceptID)
	return taken, err
}

// OrganizationsOf lists the organizations a user belongs to, by name.
func (s *Store) OrganizationsOf(ctx context.Context, userID int64) ([]UserOrganization, error) {
	orgs := []UserOrganization{}
	err := s.db.SelectContext(ctx, &orgs, `SELECT `+orgColumns+`, m.role
		FROM organizations o JOIN memberships m ON m.org_id = o.id
		WHERE m.user_id = $1 ORDER BY lower(o.name), o.id`, userID)
	return orgs, err
}

// OrganizationOf loads an organization by slug for one of its members. For
// anyone else the organization does not exist: ErrNotFound.
func (s *Store) OrganizationOf(ctx context.Context, userID int64, slug string) (UserOrganization, error) {
	var o UserOrganization
	err := s.db.GetContext(ctx, &o, `SELECT `+orgColumns+`, m.role
		FROM organizations o JOIN memberships m ON m.org_id = o.id
		WHERE m.user_id = $1 AND o.slug = $2`, userID, slug)
	return o, translate(err)
}

// UpdateOrganization renames an organization and may change its slug.
func (s *Store) UpdateOrganization(ctx context.Context, orgID int64, slug, name string, actorID int64) (Organization, error) {
	var o Organization
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &o, `UPDATE organizations AS o SET slug = $2, name = $3, updated_at = now()
			WHERE id = $1 RETURNING `+orgColumns, orgID, slug, name); err != nil {
			return translate(err)
		}
		return addAudit(ctx, tx, auditEvent(orgID, nil, actorID, "organization.updated", "organization", strconv.FormatInt(orgID, 10),
			map[string]string{"name": o.Name, "slug": o.Slug}))
	})
	return o, err
}

// Members lists an organization's members, owners first.
func (s *Store) Members(ctx context.Context, orgID int64) ([]Member, error) {
	members := []Member{}
	err := s.db.SelectContext(ctx, &members, `SELECT m.user_id, u.email, u.name, m.role, m.created_at
		FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE m.org_id = $1
		ORDER BY array_position(ARRAY['owner','admin','member','viewer'], m.role), lower(u.email)`, orgID)
	return members, err
}

// Member loads one membership.
func (s *Store) Member(ctx context.Context, orgID, userID int64) (Member, error) {
	var m Member
	err := s.db.GetContext(ctx, &m, `SELECT m.user_id, u.email, u.name, m.role, m.created_at
		FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE m.org_id = $1 AND m.user_id = $2`, orgID, userID)
	return m, translate(err)
}

// SetRole changes a member's role. Demoting the last owner is ErrLastOwner;
// the owners are locked so two demotions at once cannot both pass.
func (s *Store) SetRole(ctx context.Context, orgID, userID int64, role string, actorID int64) (Member, error) {
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := keepAnOwner(ctx, tx, orgID, userID, role); err != nil {
			return err
		}
		var was string
		err := tx.QueryRowxContext(ctx, `UPDATE memberships m SET role = $3, updated_at = now()
			FROM (SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2 FOR UPDATE) old
			WHERE m.org_id = $1 AND m.user_id = $2 RETURNING old.role`, orgID, userID, role).Scan(&was)
		if err != nil {
			return translate(err)
		}
		if was == role {
			return nil
		}
		return addAudit(ctx, tx, memberAudit(orgID, actorID, "member.role_changed", "user", userID, map[string]any{"from": was, "to": role}))
	})
	if err != nil {
		return Member{}, err
	}
	return s.Member(ctx, orgID, userID)
}

// RemoveMember ends a membership; removing the last owner is ErrLastOwner.
// The event says member.left when the member is the actor.
func (s *Store) RemoveMember(ctx context.Context, orgID, userID, actorID int64) error {
	return s.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := keepAnOwner(ctx, tx, orgID, userID, ""); err != nil {
			return err
		}
		var role string
		err := tx.QueryRowxContext(ctx, `DELETE FROM memberships WHERE org_id = $1 AND user_id = $2 RETURNING role`, orgID, userID).Scan(&role)
		if err != nil {
			return translate(err)
		}
		action := "member.removed"
		if actorID == userID {
			action = "member.left"
		}
		return addAudit(ctx, tx, memberAudit(orgID, actorID, action, "user", userID, map[string]any{"role": role}))
	})
}

// keepAnOwner fails with ErrLastOwner when userID is the only owner and is
// about to become newRole ("" for removal).
func keepAnOwner(ctx context.Context, tx *sqlx.Tx, orgID, userID int64, newRole string) error {
	if newRole == "owner" {
		return nil
	}
	var owners []int64
	if err := tx.SelectContext(ctx, &owners, `SELECT user_id FROM memberships
		WHERE org_id = $1 AND role = 'owner' ORDER BY user_id FOR UPDATE`, orgID); err != nil {
		return err
	}
	if len(owners) == 1 && owners[0] == userID {
		return ErrLastOwner
	}
	return nil
}

// OrganizationBySlug loads an organization for administration commands.
func (s *Store) OrganizationBySlug(ctx context.Context, slug string) (Organization, error) {
	var o Organization
	err := s.db.GetContext(ctx, &o, `SELECT `+orgColumns+` FROM organizations o WHERE o.slug = $1`, slug)
	return o, translate(err)
}
