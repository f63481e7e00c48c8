package tenancy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/sources"
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

// What the demo gives an agent: a workspace API key, and toolgate's own
// REST API as a source whose calls carry a personal access token of the
// demo owner.
const (
	DemoAPIKeyName  = "demo agent"
	DemoSourceName  = "toolgate"
	DemoTokenName   = "demo source toolgate"
	demoWorkspace   = "default"
	demoOpenAPIPath = "/api/v1/openapi.json"
)

// DemoPlace is where the demo lives: its owner, organization and workspace.
type DemoPlace struct {
	User      db.User
	Org       db.Organization
	Workspace db.Workspace
}

// DemoPlace finds the demo owner's organization Acme and its Default
// workspace; it is ErrNotFound once someone removed them.
func (s *Service) DemoPlace(ctx context.Context) (DemoPlace, error) {
	u, err := s.Store.UserByEmail(ctx, DemoEmail)
	if err != nil {
		return DemoPlace{}, fmt.Errorf("demo account: %w", err)
	}
	orgs, err := s.Store.OrganizationsOf(ctx, u.ID)
	if err != nil {
		return DemoPlace{}, err
	}
	for _, o := range orgs {
		if o.Name != DemoOrgName {
			continue
		}
		w, err := s.Store.WorkspaceBySlug(ctx, o.ID, demoWorkspace)
		if err != nil {
			return DemoPlace{}, fmt.Errorf("demo workspace %s/%s: %w", o.Slug, demoWorkspace, err)
		}
		return DemoPlace{User: u, Org: o.Organization, Workspace: w}, nil
	}
	return DemoPlace{}, fmt.Errorf("demo organization %s: %w", DemoOrgName, db.ErrNotFound)
}

// EnsureDemoAPIKey returns saved when it is a live key of the demo owner in
// the demo workspace, else creates a key (revoking nothing) and returns it
// with created set.
func (s *Service) EnsureDemoAPIKey(ctx context.Context, p DemoPlace, saved string) (key string, created bool, err error) {
	if strings.HasPrefix(saved, auth.APIKeyPrefix) {
		keys, err := s.Store.APIKeys(ctx, p.Org.ID, p.Workspace.ID)
		if err != nil {
			return "", false, err
		}
		// The list holds no hashes: a live key with the saved key's display
		// prefix and owner is that key (the prefix carries 30 random bits).
		// Looking it up by hash would stamp it as used on every start.
		prefix := saved[:min(len(saved), len(auth.APIKeyPrefix)+6)]
		for _, k := range keys {
			if k.Prefix == prefix && k.UserID == p.User.ID && (k.ExpiresAt == nil || k.ExpiresAt.After(time.Now())) {
				return saved, false, nil
			}
		}
	}
	_, plain, err := s.CreateAPIKey(ctx, p.Workspace, p.User, auth.Owner, APIKeyInput{Name: DemoAPIKeyName, Mode: ModeSearch})
	if err != nil {
		return "", false, fmt.Errorf("create the demo API key: %w", err)
	}
	return plain, true, nil
}

// DemoSeeded says what EnsureDemoSource created.
type DemoSeeded struct {
	Source, Credential bool
}

// EnsureDemoSource gives the demo workspace toolgate's own REST API as the
// OpenAPI source "toolgate", read from baseURL's openapi.json and called at
// baseURL, with a workspace bearer credential holding a personal access
// token of the demo owner, so its tools act as the demo owner. It creates
// only what is missing (a source pointing at another base URL is moved to
// this one) and otherwise asks for a refresh, so the tools follow this
// version's API. Call it once the server listens: discovery reads the spec
// from it.
func (s *Service) EnsureDemoSource(ctx context.Context, p DemoPlace, srcs *sources.Service, creds *credentials.Service, baseURL string) (db.Source, DemoSeeded, error) {
	var seeded DemoSeeded
	baseURL = strings.TrimRight(baseURL, "/")
	cfg, _ := json.Marshal(sources.OpenAPIConfig{Spec: jsonString(baseURL + demoOpenAPIPath), BaseURL: baseURL})
	src, err := s.demoSource(ctx, p)
	switch {
	case errors.Is(err, db.ErrNotFound):
		src, err = srcs.Create(ctx, p.Org.ID, &p.Workspace.ID, sources.Input{Name: DemoSourceName, Type: sources.TypeOpenAPI,
			Scope: sources.ScopeWorkspace, Config: cfg, ActorID: p.User.ID})
		if err != nil {
			return db.Source{}, seeded, fmt.Errorf("create the demo source: %w", err)
		}
		seeded.Source = true
	case err != nil:
		return db.Source{}, seeded, err
	case demoConfigDiffers(src.Config, baseURL):
		if src, err = srcs.Update(ctx, src, sources.Patch{Config: cfg, ActorID: p.User.ID}); err != nil {
			return db.Source{}, seeded, fmt.Errorf("point the demo source at %s: %w", baseURL, err)
		}
	}
	place := credentials.Place{OrgID: p.Org.ID, WorkspaceID: &p.Workspace.ID}
	_, err = s.Store.HolderCredential(ctx, p.Org.ID, src.ID, string(credentials.ScopeWorkspace), &p.Workspace.ID, nil)
	switch {
	case errors.Is(err, db.ErrNotFound):
		_, token, err := s.CreateToken(ctx, p.User.ID, TokenInput{Name: DemoTokenName})
		if err != nil {
			return db.Source{}, seeded, fmt.Errorf("create the demo source's token: %w", err)
		}
		_, err = creds.Create(ctx, place, credentials.Actor{UserID: p.User.ID, Role: auth.Owner}, credentials.Input{SourceID: src.ID,
			Scope: credentials.ScopeWorkspace, Auth: credentials.Auth{Type: credentials.TypeBearer}, Secret: &credentials.Secret{Value: token}})
		if err != nil {
			return db.Source{}, seeded, fmt.Errorf("keep the demo source's token as its credential: %w", err)
		}
		seeded.Credential = true
	case err != nil:
		return db.Source{}, seeded, err
	case !seeded.Source:
		// Nothing new was saved, so nothing was enqueued: refresh anyway.
		if src, err = srcs.Refresh(ctx, src); err != nil {
			return db.Source{}, seeded, err
		}
	}
	return src, seeded, nil
}

// demoSource is the demo workspace's own source named "toolgate".
func (s *Service) demoSource(ctx context.Context, p DemoPlace) (db.Source, error) {
	all, err := s.Store.Sources(ctx, p.Org.ID, db.SourceFilter{WorkspaceID: &p.Workspace.ID, Scope: string(sources.ScopeWorkspace)})
	if err != nil {
		return db.Source{}, err
	}
	for _, src := range all {
		if src.Name == DemoSourceName && src.WorkspaceID != nil && *src.WorkspaceID == p.Workspace.ID {
			return src, nil
		}
	}
	return db.Source{}, db.ErrNotFound
}

// demoConfigDiffers reports whether a stored demo source reads its spec
// from somewhere other than baseURL (the server moved to another address).
func demoConfigDiffers(stored json.RawMessage, baseURL string) bool {
	var c sources.OpenAPIConfig
	if json.Unmarshal(stored, &c) != nil {
		return true
	}
	return c.SpecURL() != baseURL+demoOpenAPIPath || c.BaseURL != baseURL
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
