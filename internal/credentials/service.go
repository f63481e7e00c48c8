package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/validation"
)

// Service applies the rules of credentials over the store and the key ring.
type Service struct {
	Store *db.Store
	Ring  *secrets.Ring
	// Refresher re-runs a source's discovery when its credentials change.
	Refresher sources.Refresher
	// Sources runs a saved source's discovery with a given credential (Test).
	Sources *sources.Service
}

// Actor is who acts, with their role in the organization at hand.
type Actor struct {
	UserID int64
	Role   auth.Role
}

// Place is where a request addresses credentials: an organization, and a
// workspace when the request comes from one.
type Place struct {
	OrgID       int64
	WorkspaceID *int64
}

// Input creates a credential.
type Input struct {
	SourceID string  `json:"source_id"`
	Scope    Scope   `json:"scope"`
	Auth     Auth    `json:"auth"`
	Secret   *Secret `json:"secret"`
}

// Patch changes a credential: new auth parameters, a new secret, or both.
// Changing the type needs a new secret.
type Patch struct {
	Auth   *Auth   `json:"auth"`
	Secret *Secret `json:"secret"`
}

// Resolved is the credential a request uses and what it adds.
type Resolved struct {
	Credential db.Credential
	Auth       *sources.Auth
}

// associatedData binds a sealed value to its credential and organization.
func associatedData(orgID int64, id string) []byte {
	return fmt.Appendf(nil, "toolgate/credential/v1 org=%d id=%s", orgID, id)
}

// AuthOf decodes a stored credential's parameters.
func AuthOf(c db.Credential) Auth {
	var a Auth
	_ = json.Unmarshal(c.Auth, &a)
	return a
}

// MayManage reports whether a role may change credentials of a scope: a
// member keeps their own, owners and admins manage the shared ones.
func MayManage(role auth.Role, scope Scope) bool {
	if scope == ScopeAccount {
		return role.AtLeast(auth.Member)
	}
	return role.AtLeast(auth.Admin)
}

func mayManage(actor Actor, scope Scope) bool { return MayManage(actor.Role, scope) }

// IsStdio reports whether a source runs as a local process, which takes
// its secrets as environment variables (custom headers become variables).
func IsStdio(src db.Source) bool {
	if src.Type != string(sources.TypeMCP) {
		return false
	}
	var c struct {
		Transport string `json:"transport"`
	}
	_ = json.Unmarshal(src.Config, &c)
	return c.Transport == sources.TransportStdio
}

// Create seals and stores a new credential, then refreshes its source.
func (s *Service) Create(ctx context.Context, place Place, actor Actor, in Input) (db.Credential, error) {
	if in.Scope == "" {
		in.Scope = ScopeOrganization
		if place.WorkspaceID != nil {
			in.Scope = ScopeWorkspace
		}
	}
	e := validation.Errors{}
	if !in.Scope.Valid() {
		e.Add("scope", "Choose account, workspace or organization.")
		return db.Credential{}, e
	}
	if in.Scope == ScopeWorkspace && place.WorkspaceID == nil {
		e.Add("scope", "Workspace credentials are created from a workspace.")
		return db.Credential{}, e
	}
	if !mayManage(actor, in.Scope) {
		return db.Credential{}, auth.ErrForbidden
	}
	src, err := s.visibleSource(ctx, place, strings.TrimSpace(in.SourceID))
	if err != nil {
		return db.Credential{}, err
	}
	stdio := IsStdio(src)
	in.Auth.normalize()
	in.Auth.check(e, stdio)
	checkSecret(&in.Auth, in.Secret, e, stdio)
	if len(e) > 0 {
		return db.Credential{}, e
	}
	nc := db.NewCredential{ID: "cred_" + uuid.NewString(), OrgID: src.OrgID, SourceID: src.ID, Scope: string(in.Scope), ActorID: actor.UserID}
	switch in.Scope {
	case ScopeWorkspace:
		nc.WorkspaceID = place.WorkspaceID
	case ScopeAccount:
		nc.UserID = &actor.UserID
	}
	if err := s.seal(&nc.KeyID, &nc.Nonce, &nc.Ciphertext, src.OrgID, nc.ID, in.Secret); err != nil {
		return db.Credential{}, err
	}
	nc.Auth, _ = json.Marshal(in.Auth)
	nc.Hint = hintOf(in.Auth, in.Secret)
	cred, err := s.Store.CreateCredential(ctx, nc, s.event(nc.OrgID, nc.WorkspaceID, actor.UserID, "credential.created", nc.ID, src.ID, in.Scope, in.Auth.Type))
	if errors.Is(err, db.ErrConflict) {
		return db.Credential{}, validation.Field("source_id", conflictMessage(in.Scope))
	}
	if err != nil {
		return db.Credential{}, err
	}
	return cred, s.Refresher.Refresh(ctx, src.OrgID, src.ID)
}

func conflictMessage(scope Scope) string {
	switch scope {
	case ScopeAccount:
		return "You already have a credential for this source; replace its value instead."
	case ScopeWorkspace:
		return "This workspace already has a credential for this source; replace its value instead."
	}
	return "The organization already has a credential for this source; replace its value instead."
}

// CreateForMe creates an account credential for a source of any
// organization the user belongs to (the /me endpoints).
func (s *Service) CreateForMe(ctx context.Context, userID int64, in Input) (db.Credential, error) {
	if in.Scope != "" && in.Scope != ScopeAccount {
		return db.Credential{}, validation.Field("scope", "Here you create your own credentials: scope account.")
	}
	in.Scope = ScopeAccount
	src, role, err := s.Store.MemberSource(ctx, userID, strings.TrimSpace(in.SourceID))
	if errors.Is(err, db.ErrNotFound) {
		return db.Credential{}, validation.Field("source_id", "No source with this id in your organizations.")
	}
	if err != nil {
		return db.Credential{}, err
	}
	return s.Create(ctx, Place{OrgID: src.OrgID}, Actor{UserID: userID, Role: auth.Role(role)}, in)
}

// visibleSource loads a source the place can see; anything else is a
// field error that does not say whether the id exists elsewhere.
func (s *Service) visibleSource(ctx context.Context, place Place, id string) (db.Source, error) {
	if id == "" {
		return db.Source{}, validation.Field("source_id", "Choose the source this credential is for.")
	}
	src, err := s.Store.Source(ctx, place.OrgID, id)
	if errors.Is(err, db.ErrNotFound) || err == nil && place.WorkspaceID != nil && src.WorkspaceID != nil && *src.WorkspaceID != *place.WorkspaceID {
		return db.Source{}, validation.Field("source_id", "No source with this id here.")
	}
	return src, err
}

// Get loads a credential the actor may see from the place: another
// user's account credential, or another workspace's, is not found.
func (s *Service) Get(ctx context.Context, place Place, actor Actor, id string) (db.Credential, error) {
	c, err := s.Store.Credential(ctx, place.OrgID, id)
	if err != nil {
		return db.Credential{}, err
	}
	if c.Scope == string(ScopeAccount) && (c.UserID == nil || *c.UserID != actor.UserID) {
		return db.Credential{}, db.ErrNotFound
	}
	if place.WorkspaceID != nil {
		if c.WorkspaceID != nil && *c.WorkspaceID != *place.WorkspaceID ||
			c.SourceWorkspaceID != nil && *c.SourceWorkspaceID != *place.WorkspaceID {
			return db.Credential{}, db.ErrNotFound
		}
	}
	return c, nil
}

// List returns the credentials the actor sees from the place: in a
// workspace, those that apply there (their own, the workspace's and the
// organization's); in the organization, all but other users' own.
func (s *Service) List(ctx context.Context, place Place, actor Actor, scope Scope, sourceID string) ([]db.Credential, error) {
	if scope != "" && !scope.Valid() {
		return nil, validation.Field("scope", "Choose account, workspace or organization.")
	}
	return s.Store.Credentials(ctx, place.OrgID, db.CredentialFilter{
		ViewerID: actor.UserID, VisibleIn: place.WorkspaceID, Scope: string(scope), SourceID: sourceID,
	})
}

// Mine lists the user's own credentials in every organization.
func (s *Service) Mine(ctx context.Context, userID int64) ([]db.Credential, error) {
	return s.Store.UserCredentials(ctx, userID)
}

// Update changes a credential's parameters or replaces its secret, then
// refreshes its source. Without a new secret the stored one is kept (and
// sealed again under the current key); changing the type needs one.
func (s *Service) Update(ctx context.Context, place Place, actor Actor, id string, p Patch) (db.Credential, error) {
	c, err := s.Get(ctx, place, actor, id)
	if err != nil {
		return db.Credential{}, err
	}
	if !mayManage(actor, Scope(c.Scope)) {
		return db.Credential{}, auth.ErrForbidden
	}
	src, err := s.Store.Source(ctx, c.OrgID, c.SourceID)
	if err != nil {
		return db.Credential{}, err
	}
	stdio := IsStdio(src)
	old := AuthOf(c)
	next := old
	switch {
	case p.Auth != nil && p.Auth.Type == "":
		// Parameters without a type change those of the stored type.
		next = mergeAuth(old, *p.Auth)
	case p.Auth != nil:
		next = *p.Auth
	}
	e := validation.Errors{}
	next.normalize()
	next.check(e, stdio)
	sec := p.Secret
	if sec == nil && next.Type != TypeNone {
		if next.Type != old.Type {
			e.Add("secret", "A new type needs its secret: enter it again.")
			return db.Credential{}, e
		}
		if sec, err = s.open(c); err != nil {
			return db.Credential{}, err
		}
	}
	checkSecret(&next, sec, e, stdio)
	if len(e) > 0 {
		return db.Credential{}, e
	}
	ch := db.CredentialChange{Hint: hintOf(next, sec), ActorID: actor.UserID}
	ch.Auth, _ = json.Marshal(next)
	if err := s.seal(&ch.KeyID, &ch.Nonce, &ch.Ciphertext, c.OrgID, c.ID, sec); err != nil {
		return db.Credential{}, err
	}
	action := "credential.updated"
	if p.Secret != nil {
		action = "credential.replaced"
	}
	updated, err := s.Store.UpdateCredential(ctx, c.OrgID, c.ID, ch, s.event(c.OrgID, c.WorkspaceID, actor.UserID, action, c.ID, c.SourceID, Scope(c.Scope), next.Type))
	if err != nil {
		return db.Credential{}, err
	}
	return updated, s.Refresher.Refresh(ctx, c.OrgID, c.SourceID)
}

// mergeAuth overlays the set parameters of patch on old.
func mergeAuth(old, patch Auth) Auth {
	for _, f := range []struct {
		dst *string
		v   string
	}{{&old.Header, patch.Header}, {&old.Scheme, patch.Scheme},
		{&old.In, patch.In}, {&old.Name, patch.Name}, {&old.Username, patch.Username}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	return old
}

// Delete removes a credential and refreshes its source.
func (s *Service) Delete(ctx context.Context, place Place, actor Actor, id string) error {
	c, err := s.Get(ctx, place, actor, id)
	if err != nil {
		return err
	}
	if !mayManage(actor, Scope(c.Scope)) {
		return auth.ErrForbidden
	}
	if err := s.Store.DeleteCredential(ctx, c.OrgID, c.ID, s.event(c.OrgID, c.WorkspaceID, actor.UserID, "credential.deleted", c.ID, c.SourceID, Scope(c.Scope), AuthOf(c).Type)); err != nil {
		return err
	}
	return s.Refresher.Refresh(ctx, c.OrgID, c.SourceID)
}

// Test runs the discovery of a credential's source with this credential,
// saving nothing. Only those who may manage it may test it.
func (s *Service) Test(ctx context.Context, place Place, actor Actor, id string) (sources.TestResult, error) {
	c, err := s.Get(ctx, place, actor, id)
	if err != nil {
		return sources.TestResult{}, err
	}
	if !mayManage(actor, Scope(c.Scope)) {
		return sources.TestResult{}, auth.ErrForbidden
	}
	src, err := s.Store.Source(ctx, c.OrgID, c.SourceID)
	if err != nil {
		return sources.TestResult{}, err
	}
	a, err := s.authOf(ctx, c, IsStdio(src))
	if err != nil {
		return sources.TestResult{Error: err.Error(), Tools: []sources.Tool{}, Warnings: []sources.Warning{}}, nil
	}
	return s.Sources.TestWith(ctx, src, a), nil
}

// Resolve picks the credential of a call to a source from a workspace made
// as a user: the user's own, then the workspace's, then the
// organization's. Nobody's call uses another user's own credential. It is
// nil, nil when the source has none that applies.
func (s *Service) Resolve(ctx context.Context, src db.Source, workspaceID int64, userID *int64) (*Resolved, error) {
	return s.first(ctx, src, &workspaceID, userID)
}

// ForDiscovery is the credential a source's discovery uses: the
// workspace's (for a workspace source), then the organization's. Account
// credentials are for calls made as their user only.
func (s *Service) ForDiscovery(ctx context.Context, src db.Source) (*sources.Auth, error) {
	r, err := s.first(ctx, src, src.WorkspaceID, nil)
	if r == nil || err != nil {
		return nil, err
	}
	return r.Auth, nil
}

// Open is what a stored credential adds to the requests of src, without
// choosing the credential or recording its use as [Service.Resolve] does:
// the gateway chooses in the query that finds the tool (in Resolve's
// order), keeps the result while the credential's updated_at holds, and
// records use at most once a minute.
func (s *Service) Open(ctx context.Context, src db.Source, c db.Credential) (*sources.Auth, error) {
	return s.authOf(ctx, c, IsStdio(src))
}

func (s *Service) first(ctx context.Context, src db.Source, workspaceID, userID *int64) (*Resolved, error) {
	cs, err := s.Store.CredentialsFor(ctx, src.OrgID, src.ID, workspaceID, userID)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	c := cs[0]
	a, err := s.authOf(ctx, c, IsStdio(src))
	if err != nil {
		return nil, err
	}
	if err := s.Store.TouchCredential(ctx, c.ID); err != nil {
		return nil, err
	}
	return &Resolved{Credential: c, Auth: a}, nil
}

func (s *Service) authOf(ctx context.Context, c db.Credential, stdio bool) (*sources.Auth, error) {
	a := AuthOf(c)
	if a.Type == TypeNone {
		return &sources.Auth{}, nil
	}
	sec, err := s.open(c)
	if err != nil {
		return nil, err
	}
	return build(a, *sec, stdio), nil
}

// Keep stores secret-looking values moved out of a source's configuration
// as the source's credential at its own scope (a custom-headers
// credential, merged into the one already there).
func (s *Service) Keep(ctx context.Context, src db.Source, actorID int64, values map[string]string) error {
	if len(values) == 0 {
		return nil
	}
	pairs := map[string]string{}
	for k, v := range values {
		_, name, _ := strings.Cut(k, ".")
		pairs[name] = v
	}
	scope, place := ScopeOrganization, Place{OrgID: src.OrgID}
	if src.WorkspaceID != nil {
		scope, place.WorkspaceID = ScopeWorkspace, src.WorkspaceID
	}
	actor := Actor{UserID: actorID, Role: auth.Admin}
	existing, err := s.Store.HolderCredential(ctx, src.OrgID, src.ID, string(scope), place.WorkspaceID, nil)
	if errors.Is(err, db.ErrNotFound) {
		_, err = s.Create(ctx, place, actor, Input{SourceID: src.ID, Scope: scope, Auth: Auth{Type: TypeHeaders}, Secret: &Secret{Headers: pairs}})
		return err
	}
	if err != nil {
		return err
	}
	a := AuthOf(existing)
	if a.Type != TypeHeaders {
		field := "config.headers"
		if IsStdio(src) {
			field = "config.env"
		}
		return validation.Field(field, fmt.Sprintf("This source's %s credential is a %s; give secret values there, not in the configuration.", strings.ToLower(scope.Label()), strings.ToLower(a.Type.Label())))
	}
	sec, err := s.open(existing)
	if err != nil {
		return err
	}
	merged := sources.Overlay(sec.Headers, pairs)
	_, err = s.Update(ctx, place, actor, existing.ID, Patch{Secret: &Secret{Headers: merged}})
	return err
}

func (s *Service) seal(keyID *string, nonce, ct *[]byte, orgID int64, id string, sec *Secret) error {
	if sec == nil {
		sec = &Secret{}
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return err
	}
	sealed, err := s.Ring.Seal(plain, associatedData(orgID, id))
	if err != nil {
		return err
	}
	*keyID, *nonce, *ct = sealed.KeyID, sealed.Nonce, sealed.Ciphertext
	return nil
}

// open decrypts a credential's secret. A value under a key the ring lacks,
// or one that does not open, is a clear error naming the credential.
func (s *Service) open(c db.Credential) (*Secret, error) {
	plain, err := s.Ring.Open(secrets.Sealed{KeyID: c.KeyID, Nonce: c.Nonce, Ciphertext: c.Ciphertext}, associatedData(c.OrgID, c.ID))
	switch {
	case errors.Is(err, secrets.ErrUnknownKey):
		return nil, fmt.Errorf("credential %s was sealed under key %q, which TOOLGATE_SECRET_KEYS does not hold: add that key back, or replace the credential's value", c.ID, c.KeyID)
	case err != nil:
		return nil, fmt.Errorf("credential %s: %w", c.ID, err)
	}
	var sec Secret
	if err := json.Unmarshal(plain, &sec); err != nil {
		return nil, fmt.Errorf("credential %s: the decrypted value is not a secret object", c.ID)
	}
	return &sec, nil
}

func (s *Service) event(orgID int64, workspaceID *int64, actorID int64, action, id, sourceID string, scope Scope, typ Type) db.AuditEvent {
	details, _ := json.Marshal(map[string]string{"source_id": sourceID, "scope": string(scope), "type": string(typ)})
	var actor *int64
	if actorID != 0 {
		actor = &actorID
	}
	return db.AuditEvent{OrgID: orgID, WorkspaceID: workspaceID, ActorID: actor, Action: action, TargetType: "credential", TargetID: id, Details: details}
}
