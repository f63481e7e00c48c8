package db

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// CallTool is a tool as a call needs it: the tool, what its source says
// about reaching the upstream, and the credential the caller's call uses.
type CallTool struct {
	VisibleTool
	SourceWorkspaceID   *int64 `db:"source_workspace_id"`
	SourceConfigVersion int    `db:"source_config_version"`
	// SourceConfig is the whole configuration of an MCP source, and only
	// {"baseUrl"} or {"endpoint"} of the others (an inline OpenAPI document
	// can be megabytes, and a call needs none of it).
	SourceConfig     json.RawMessage `db:"source_config"`
	SourceBaseURL    string          `db:"source_base_url"`
	SourceGeneration int64           `db:"source_generation"`
	SourceUpdatedAt  time.Time       `db:"source_updated_at"`
	// SourceApprovalOverride is the source's override of its tools'
	// default approval ("auto" or "required"); nil keeps each tool's own.
	SourceApprovalOverride *string `db:"source_approval_override"`
	// The policy versions of the organization and of the workspace: a
	// compiled rule set is reused while both stay the same.
	OrgPolicyVersion       int64 `db:"org_policy_version"`
	WorkspacePolicyVersion int64 `db:"workspace_policy_version"`

	// The credential, all nil when none applies.
	CredentialID        *string    `db:"credential_id"`
	CredentialScope     *string    `db:"credential_scope"`
	CredentialAuth      []byte     `db:"credential_auth"`
	CredentialKeyID     *string    `db:"credential_key_id"`
	CredentialNonce     []byte     `db:"credential_nonce"`
	CredentialSealed    []byte     `db:"credential_ciphertext"`
	CredentialUpdatedAt *time.Time `db:"credential_updated_at"`
}

// Credential is the row's credential, or nil when none applies.
func (t CallTool) Credential(orgID int64) *Credential {
	if t.CredentialID == nil {
		return nil
	}
	c := &Credential{ID: *t.CredentialID, OrgID: orgID, SourceID: t.SourceID, Auth: t.CredentialAuth,
		Nonce: t.CredentialNonce, Ciphertext: t.CredentialSealed}
	if t.CredentialScope != nil {
		c.Scope = *t.CredentialScope
	}
	if t.CredentialKeyID != nil {
		c.KeyID = *t.CredentialKeyID
	}
	if t.CredentialUpdatedAt != nil {
		c.UpdatedAt = *t.CredentialUpdatedAt
	}
	return c
}

const visibleToolColumns = `t.source_id, t.path, t.name, t.aliases, t.title, t.description, t.input_schema,
	COALESCE(t.output_schema, 'null') AS output_schema, t.annotations, t.default_approval, t.ref, t.params, t.doc_hash,
	s.name AS source_name, s.slug AS source_slug, s.type AS source_type, s.scope AS source_scope, s.enabled AS source_enabled`

// callTool finds the tool by path first, through the primary key; only
// when no path matches does it look through the aliases. The credential is
// the first of CredentialsFor's order: the user's own, the workspace's,
// the organization's.
const callTool = `WITH visible AS (
		SELECT id FROM sources WHERE org_id = $1 AND (workspace_id IS NULL OR workspace_id = $2)
	), exact AS (
		SELECT t.source_id, t.path FROM source_tools t JOIN visible v ON v.id = t.source_id WHERE t.path = $3
	), found AS (
		SELECT source_id, path FROM exact
		UNION ALL
		SELECT t.source_id, t.path FROM source_tools t JOIN visible v ON v.id = t.source_id
		WHERE NOT EXISTS (SELECT 1 FROM exact) AND $3 = ANY (t.aliases)
	)
	SELECT ` + visibleToolColumns + `, s.workspace_id AS source_workspace_id, s.config_version AS source_config_version,
		CASE s.type WHEN 'mcp' THEN s.config
			ELSE jsonb_strip_nulls(jsonb_build_object('baseUrl', s.config->'baseUrl', 'endpoint', s.config->'endpoint')) END AS source_config,
		s.base_url AS source_base_url, s.generation AS source_generation, s.updated_at AS source_updated_at,
		s.approval_override AS source_approval_override, o.policy_version AS org_policy_version,
		COALESCE(w.policy_version, 0) AS workspace_policy_version,
		c.id AS credential_id, c.scope AS credential_scope, c.auth AS credential_auth, c.key_id AS credential_key_id,
		c.nonce AS credential_nonce, c.ciphertext AS credential_ciphertext, c.updated_at AS credential_updated_at
	FROM found f
	JOIN source_tools t ON t.source_id = f.source_id AND t.path = f.path
	JOIN sources s ON s.id = t.source_id
	JOIN organizations o ON o.id = s.org_id
	LEFT JOIN workspaces w ON w.id = $2 AND w.org_id = s.org_id
	LEFT JOIN LATERAL (
		SELECT c.id, c.scope, c.auth, c.key_id, c.nonce, c.ciphertext, c.updated_at FROM credentials c
		WHERE c.org_id = s.org_id AND c.source_id = s.id
		AND ((c.scope = 'account' AND c.user_id = $4) OR (c.scope = 'workspace' AND c.workspace_id = $2) OR c.scope = 'organization')
		ORDER BY CASE c.scope WHEN 'account' THEN 0 WHEN 'workspace' THEN 1 ELSE 2 END LIMIT 1
	) c ON true
	ORDER BY s.enabled DESC LIMIT 1`

// CallTool finds, in one round trip, a tool a workspace sees by its path
// or one of its aliases, with its source and the credential a call by
// userID uses. A tool of a disabled source is returned (SourceEnabled
// false) so the caller can say so; ErrNotFound when nothing matches. It
// runs on every tool call, so it goes through pgx itself (a cached
// prepared statement, no reflection).
func (s *Store) CallTool(ctx context.Context, orgID, workspaceID, userID int64, path string) (CallTool, error) {
	var t CallTool
	var aliases, params []string
	err := s.pool.QueryRow(ctx, callTool, orgID, workspaceID, path, userID).Scan(
		&t.SourceID, &t.Path, &t.Name, &aliases, &t.Title, &t.Description, (*[]byte)(&t.InputSchema),
		(*[]byte)(&t.OutputSchema), (*[]byte)(&t.Annotations), &t.DefaultApproval, (*[]byte)(&t.Ref), &params, &t.DocHash,
		&t.SourceName, &t.SourceSlug, &t.SourceType, &t.SourceScope, &t.SourceEnabled,
		&t.SourceWorkspaceID, &t.SourceConfigVersion, (*[]byte)(&t.SourceConfig), &t.SourceBaseURL, &t.SourceGeneration, &t.SourceUpdatedAt,
		&t.SourceApprovalOverride, &t.OrgPolicyVersion, &t.WorkspacePolicyVersion,
		&t.CredentialID, &t.CredentialScope, &t.CredentialAuth, &t.CredentialKeyID, &t.CredentialNonce, &t.CredentialSealed, &t.CredentialUpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return CallTool{}, ErrNotFound
	}
	t.Aliases, t.Params = aliases, params
	return t, err
}

// ListedTool is a tool as a listing shows it, with what policies read of
// it besides: the HTTP method of an OpenAPI operation and the source's
// approval override.
type ListedTool struct {
	VisibleTool
	// Method is the OpenAPI operation's method, "" for other types.
	Method string `db:"method"`
	// SourceApprovalOverride is "auto", "required" or nil.
	SourceApprovalOverride *string `db:"source_approval_override"`
}

// WorkspaceTools lists every tool of the enabled sources a workspace sees
// (its own and its organization's), by path.
func (s *Store) WorkspaceTools(ctx context.Context, orgID, workspaceID int64) ([]ListedTool, error) {
	out := []ListedTool{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+visibleToolColumns+`, COALESCE(t.ref->>'method', '') AS method,
		s.approval_override AS source_approval_override
		FROM sources s JOIN source_tools t ON t.source_id = s.id
		WHERE s.org_id = $1 AND (s.workspace_id IS NULL OR s.workspace_id = $2) AND s.enabled
		ORDER BY t.path, t.source_id`, orgID, workspaceID)
	return out, err
}

// RegistryVersion is a fingerprint of the tool sets a workspace sees: it
// changes when a source it sees is added, removed, enabled, disabled,
// edited, or rediscovered with new tools (a new generation).
func (s *Store) RegistryVersion(ctx context.Context, orgID, workspaceID int64) (string, error) {
	var v string
	err := s.db.GetContext(ctx, &v, `SELECT md5(COALESCE(string_agg(id || ':' || generation || ':' || enabled || ':' || tool_count
			|| ':' || floor(extract(epoch FROM updated_at) * 1000000), ',' ORDER BY id), ''))
		FROM sources WHERE org_id = $1 AND (workspace_id IS NULL OR workspace_id = $2)`, orgID, workspaceID)
	return v, err
}

// ToolRef names one tool of a source.
type ToolRef struct {
	SourceID, Path string
}

// ToolsByRef loads, in one query, the tools refs name among those a
// workspace sees (search hits, to evaluate policies on them); refs that
// name nothing are left out.
func (s *Store) ToolsByRef(ctx context.Context, orgID, workspaceID int64, refs []ToolRef) ([]ListedTool, error) {
	out := []ListedTool{}
	if len(refs) == 0 {
		return out, nil
	}
	ids, paths := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		ids[i], paths[i] = r.SourceID, r.Path
	}
	err := s.db.SelectContext(ctx, &out, `SELECT `+visibleToolColumns+`, COALESCE(t.ref->>'method', '') AS method,
		s.approval_override AS source_approval_override
		FROM unnest(CAST($3 AS text[]), CAST($4 AS text[])) AS r(source_id, path)
		JOIN sources s ON s.id = r.source_id
		JOIN source_tools t ON t.source_id = s.id AND t.path = r.path
		WHERE s.org_id = $1 AND (s.workspace_id IS NULL OR s.workspace_id = $2)`, orgID, workspaceID, ids, paths)
	return out, err
}
