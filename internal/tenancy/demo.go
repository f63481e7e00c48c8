package tenancy

import (
	"context"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
)

// The demo organization that `make run` seeds.
const (
	DemoEmail   = "demo@toolgate.local"
	DemoOrgName = "Acme"
)

// SeedDemo creates the demo owner with password, the organization Acme and
// its Default workspace, unless the demo account exists. It reports whether
// it created them.
func (s *Service) SeedDemo(ctx context.Context, password string) (bool, error) {
	if _, err := s.Store.UserByEmail(ctx, DemoEmail); err == nil {
		return false, nil
	} else if !errors.Is(err, db.ErrNotFound) {
		return false, err
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return false, err
	}
	err = s.Store.InTx(ctx, func(tx *sqlx.Tx) error {
		u, err := db.CreateUser(ctx, tx, DemoEmail, "Demo Owner", hash)
		if err != nil {
			return fmt.Errorf("create demo user: %w", err)
		}
		_, err = s.createOrganization(ctx, tx, u.ID, NameInput{Name: DemoOrgName})
		return err
	})
	return err == nil, err
}

// CreateAccount makes an account headlessly (toolgate users create): with
// orgName it also creates that organization, owned by the account.
func (s *Service) CreateAccount(ctx context.Context, email, name, password, orgName string) (db.User, *db.Organization, error) {
	in := SignUpInput{Email: email, Name: name, Password: password, OrgName: orgName}
	in.Normalize()
	problems := in.Validate()
	if orgName == "" {
		delete(problems, "org_name")
	}
	if len(problems) > 0 {
		return db.User{}, nil, problems
	}
	hash, err := auth.HashPassword(in.Password)
	if err != nil {
		return db.User{}, nil, err
	}
	var user db.User
	var org *db.Organization
	err = s.Store.InTx(ctx, func(tx *sqlx.Tx) error {
		user, err = db.CreateUser(ctx, tx, in.Email, in.Name, hash)
		if errors.Is(err, db.ErrConflict) {
			return fmt.Errorf("an account with email %s exists: %w", in.Email, err)
		} else if err != nil || in.OrgName == "" {
			return err
		}
		o, err := s.createOrganization(ctx, tx, user.ID, NameInput{Name: in.OrgName})
		org = &o
		return err
	})
	return user, org, err
}
