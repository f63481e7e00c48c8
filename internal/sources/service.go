package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/validation"
)

// Refresher refreshes saved sources and removes deleted ones from the
// search index: the worker's queue (worker.Queue) enqueues both as jobs.
type Refresher interface {
	Refresh(ctx context.Context, orgID int64, id string) error
	// Delete removes a source and its search documents.
	Delete(ctx context.Context, orgID int64, id string, actorID int64) error
}

// Discoverer runs discovery without saving (the Test button). Auth, when
// not nil, is the credential the upstream's requests carry.
type Discoverer interface {
	Discover(ctx context.Context, cfg Config, etag string, auth *Auth) (*Discovery, bool, error)
}

// Service applies the rules of sources over the store.
type Service struct {
	Store      *db.Store
	Rules      Rules
	Refresher  Refresher
	Discoverer Discoverer
	// Credentials gives saved sources their credential for discovery and
	// keeps secret values moved out of configurations.
	Credentials Credentials
}

// Input creates a source.
type Input struct {
	Name    string          `json:"name"`
	Type    Type            `json:"type"`
	Scope   Scope           `json:"scope"`
	Enabled *bool           `json:"enabled"`
	Config  json.RawMessage `json:"config"`
	// ActorID is who creates it: the author of a credential made from
	// secret values in the configuration.
	ActorID int64 `json:"-"`
}

// Patch changes a source; nil fields stay. Type and scope never change.
type Patch struct {
	Name    *string         `json:"name"`
	Enabled *bool           `json:"enabled"`
	Config  json.RawMessage `json:"config"`
	ActorID int64           `json:"-"`
}

// check validates an input and returns its parsed configuration.
func (s *Service) check(in *Input) (Config, validation.Errors) {
	in.Name = strings.TrimSpace(in.Name)
	e := validation.Errors{}
	e.Name("name", in.Name, validation.MaxNameLen)
	if _, bad := e["name"]; !bad && validation.Slugify(in.Name) == "" {
		e.Add("name", "Use at least one letter or digit: the name becomes the tools' namespace.")
	}
	if in.Scope == "" {
		in.Scope = ScopeWorkspace
	}
	if in.Scope != ScopeWorkspace && in.Scope != ScopeOrganization {
		e.Add("scope", "Choose workspace or organization.")
	}
	if !in.Type.Valid() {
		e.Add("type", "Choose mcp, openapi or graphql.")
		return nil, e
	}
	cfg, problems := ParseConfig(in.Type, in.Config, s.Rules)
	for k, v := range problems {
		e.Add(k, v)
	}
	return cfg, e
}

// Create saves a source in the workspace (or, with scope organization, for
// the whole organization) and enqueues its refresh. A failed discovery
// still leaves the source saved, in state failed with its error.
func (s *Service) Create(ctx context.Context, orgID int64, workspaceID *int64, in Input) (db.Source, error) {
	cfg, problems := s.check(&in)
	if in.Scope == ScopeWorkspace && workspaceID == nil {
		problems.Add("scope", "Organization-wide sources are created with scope organization.")
	}
	if len(problems) > 0 {
		return db.Source{}, problems
	}
	if in.Scope == ScopeOrganization {
		workspaceID = nil
	}
	cfg, moved := SplitSecrets(cfg)
	if len(moved) > 0 && s.Credentials == nil {
		return db.Source{}, errors.New("secret values in a configuration need the credentials store")
	}
	stored, _ := json.Marshal(cfg)
	enabled := in.Enabled == nil || *in.Enabled
	src, err := s.Store.CreateSource(ctx, db.NewSource{
		ID: "src_" + uuid.NewString(), OrgID: orgID, WorkspaceID: workspaceID, Scope: string(in.Scope),
		Name: in.Name, Slug: validation.Slugify(in.Name), Type: string(in.Type), ConfigVersion: ConfigVersion,
		Config: stored, Enabled: enabled, AuthFingerprint: AuthFingerprint(cfg), ActorID: in.ActorID,
	})
	if err := nameConflict(err, in.Name); err != nil {
		return db.Source{}, err
	}
	if len(moved) > 0 {
		if err := s.Credentials.Keep(ctx, src, in.ActorID, moved); err != nil {
			// The source would run without its secret: take it back.
			_ = s.Store.DeleteSource(context.WithoutCancel(ctx), orgID, src.ID, in.ActorID)
			return db.Source{}, fmt.Errorf("keep the secret values of source %s as its credential: %w", src.ID, err)
		}
	}
	if err := s.Refresher.Refresh(ctx, orgID, src.ID); err != nil {
		return db.Source{}, err
	}
	return s.Store.Source(ctx, orgID, src.ID)
}

func nameConflict(err error, name string) error {
	switch {
	case errors.Is(err, db.ErrNamespaceTaken):
		return validation.Field("name", fmt.Sprintf("Another source this workspace sees already uses the namespace %q; choose another name.", validation.Slugify(name)))
	case errors.Is(err, db.ErrConflict):
		return validation.Field("name", "A source with this name exists in this scope.")
	}
	return err
}

// Update edits a source and refreshes it. Masked secret values sent back
// keep their stored values.
func (s *Service) Update(ctx context.Context, src db.Source, p Patch) (db.Source, error) {
	in := Input{Name: src.Name, Type: Type(src.Type), Scope: Scope(src.Scope), Config: src.Config}
	if p.Name != nil {
		in.Name = *p.Name
	}
	if len(p.Config) > 0 {
		in.Config = p.Config
	}
	cfg, problems := s.check(&in)
	if len(problems) > 0 {
		return db.Source{}, problems
	}
	if stored, serr := ParseConfig(Type(src.Type), src.Config, Rules{AllowStdio: true}); len(serr) == 0 {
		KeepMasked(cfg, stored)
	}
	cfg, moved := SplitSecrets(cfg)
	if len(moved) > 0 {
		if s.Credentials == nil {
			return db.Source{}, errors.New("secret values in a configuration need the credentials store")
		}
		// Before the source changes, so a refused value leaves both as they were.
		if err := s.Credentials.Keep(ctx, src, p.ActorID, moved); err != nil {
			return db.Source{}, err
		}
	}
	enabled := src.Enabled
	if p.Enabled != nil {
		enabled = *p.Enabled
	}
	raw, _ := json.Marshal(cfg)
	updated, err := s.Store.UpdateSource(ctx, src.OrgID, src.ID, src.WorkspaceID, db.SourceUpdate{
		Name: in.Name, Slug: validation.Slugify(in.Name), Config: raw, Enabled: enabled, AuthFingerprint: AuthFingerprint(cfg),
		ActorID: p.ActorID,
	})
	if err := nameConflict(err, in.Name); err != nil {
		return db.Source{}, err
	}
	if err := s.Refresher.Refresh(ctx, src.OrgID, updated.ID); err != nil {
		return db.Source{}, err
	}
	return s.Store.Source(ctx, src.OrgID, updated.ID)
}

// Delete removes a source and its tools, and enqueues removing its
// documents from the search index.
func (s *Service) Delete(ctx context.Context, src db.Source, actorID int64) error {
	return s.Refresher.Delete(ctx, src.OrgID, src.ID, actorID)
}

// SetEnabled turns a source on or off.
func (s *Service) SetEnabled(ctx context.Context, src db.Source, actorID int64, enabled bool) (db.Source, error) {
	return s.Update(ctx, src, Patch{Enabled: &enabled, ActorID: actorID})
}

// Refresh enqueues a rediscovery of a saved source.
func (s *Service) Refresh(ctx context.Context, src db.Source) (db.Source, error) {
	if err := s.Refresher.Refresh(ctx, src.OrgID, src.ID); err != nil {
		return db.Source{}, err
	}
	return s.Store.Source(ctx, src.OrgID, src.ID)
}

// TestResult is what a Test run found, without saving anything.
type TestResult struct {
	ToolCount   int          `json:"tool_count"`
	Tools       []Tool       `json:"tools"`
	Warnings    []Warning    `json:"warnings"`
	AuthProfile *AuthProfile `json:"auth_profile"`
	Server      string       `json:"server,omitempty"`
	LatencyMS   int64        `json:"latency_ms"`
	Error       string       `json:"error,omitempty"`
}

// TestSampleSize is how many tools a test run shows.
const TestSampleSize = 10

// Test runs discovery of an unsaved configuration. Invalid input is an
// error; a failed discovery is a result with Error set.
func (s *Service) Test(ctx context.Context, in Input) (TestResult, error) {
	if strings.TrimSpace(in.Name) == "" {
		in.Name = "test"
	}
	cfg, problems := s.check(&in)
	if len(problems) > 0 {
		return TestResult{}, problems
	}
	return s.run(ctx, validation.Slugify(in.Name), cfg, nil), nil
}

// TestSaved runs discovery of a saved source, with the credential its
// discovery uses, without storing the result.
func (s *Service) TestSaved(ctx context.Context, src db.Source) (TestResult, error) {
	var auth *Auth
	if s.Credentials != nil {
		var err error
		if auth, err = s.Credentials.ForDiscovery(ctx, src); err != nil {
			return TestResult{Error: err.Error(), Tools: []Tool{}, Warnings: []Warning{}}, nil
		}
	}
	return s.TestWith(ctx, src, auth), nil
}

// TestWith runs discovery of a saved source with the given credential
// (a credential's Test button), saving nothing.
func (s *Service) TestWith(ctx context.Context, src db.Source, auth *Auth) TestResult {
	cfg, problems := ParseConfig(Type(src.Type), src.Config, s.Rules)
	if len(problems) > 0 {
		return TestResult{Error: "the configuration is no longer valid: " + problems.Error(), Tools: []Tool{}, Warnings: []Warning{}}
	}
	return s.run(ctx, src.Slug, cfg, auth)
}

func (s *Service) run(ctx context.Context, namespace string, cfg Config, auth *Auth) TestResult {
	start := time.Now()
	disc, _, err := s.Discoverer.Discover(ctx, cfg, "", auth)
	res := TestResult{LatencyMS: time.Since(start).Milliseconds(), Tools: []Tool{}, Warnings: []Warning{}}
	if err != nil {
		res.Error = auth.Redact(err.Error())
		return res
	}
	tools := AssignPaths(namespace, disc.Tools)
	res.ToolCount = len(tools)
	res.Tools = tools[:min(len(tools), TestSampleSize)]
	if disc.Warnings != nil {
		res.Warnings = disc.Warnings
	}
	res.AuthProfile, res.Server = disc.AuthProfile, disc.Server
	return res
}
