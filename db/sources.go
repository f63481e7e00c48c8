package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Source is a registered tool source.
type Source struct {
	ID              string          `db:"id"`
	OrgID           int64           `db:"org_id"`
	WorkspaceID     *int64          `db:"workspace_id"`
	WorkspaceSlug   *string         `db:"workspace_slug"`
	Scope           string          `db:"scope"`
	Name            string          `db:"name"`
	Slug            string          `db:"slug"`
	Type            string          `db:"type"`
	ConfigVersion   int             `db:"config_version"`
	Config          json.RawMessage `db:"config"`
	Enabled         bool            `db:"enabled"`
	State           string          `db:"state"`
	Error           string          `db:"error"`
	Warnings        json.RawMessage `db:"warnings"`
	SpecHash        string          `db:"spec_hash"`
	AuthFingerprint string          `db:"auth_fingerprint"`
	ETag            string          `db:"etag"`
	BaseURL         string          `db:"base_url"`
	Server          string          `db:"server"`
	AuthProfile     json.RawMessage `db:"auth_profile"`
	Quality         json.RawMessage `db:"quality"`
	ToolCount       int             `db:"tool_count"`
	DiscoveryMS     int             `db:"discovery_ms"`
	LastRefreshedAt *time.Time      `db:"last_refreshed_at"`
	LastSuccessAt   *time.Time      `db:"last_success_at"`
	LastFailureAt   *time.Time      `db:"last_failure_at"`
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
}

const sourceColumns = `s.id, s.org_id, s.workspace_id, w.slug AS workspace_slug, s.scope, s.name, s.slug, s.type,
	s.config_version, s.config, s.enabled, s.state, s.error, s.warnings, s.spec_hash, s.auth_fingerprint, s.etag,
	s.base_url, s.server, COALESCE(s.auth_profile, 'null') AS auth_profile, COALESCE(s.quality, 'null') AS quality, s.tool_count, s.discovery_ms, s.last_refreshed_at,
	s.last_success_at, s.last_failure_at, s.created_at, s.updated_at`

const sourceFrom = ` FROM sources s LEFT JOIN workspaces w ON w.id = s.workspace_id`

// NewSource is what creating a source writes.
type NewSource struct {
	ID              string
	OrgID           int64
	WorkspaceID     *int64
	Scope           string
	Name            string
	Slug            string
	Type            string
	ConfigVersion   int
	Config          json.RawMessage
	Enabled         bool
	AuthFingerprint string
}

// CreateSource inserts a source in state queued. The organization is locked
// for the transaction so namespaces stay unique across scopes.
func (s *Store) CreateSource(ctx context.Context, in NewSource) (Source, error) {
	err := s.inPgxTx(ctx, func(tx pgx.Tx) error {
		if err := lockNamespaces(ctx, tx, in.OrgID, in.WorkspaceID, in.Slug, ""); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO sources (id, org_id, workspace_id, scope, name, slug, type, config_version, config, enabled, auth_fingerprint)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			in.ID, in.OrgID, in.WorkspaceID, in.Scope, in.Name, in.Slug, in.Type, in.ConfigVersion, in.Config, in.Enabled, in.AuthFingerprint)
		return translate(err)
	})
	if err != nil {
		return Source{}, err
	}
	return s.Source(ctx, in.OrgID, in.ID)
}

// ErrNamespaceTaken: another source the same workspaces see uses the slug.
var ErrNamespaceTaken = fmt.Errorf("%w: namespace", ErrConflict)

// lockNamespaces takes the organization's source lock and checks that slug
// is free in every workspace that would see the source.
func lockNamespaces(ctx context.Context, tx pgx.Tx, orgID int64, workspaceID *int64, slug, exceptID string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(8215, CAST($1 AS int))`, orgID%2147483647); err != nil {
		return err
	}
	var taken bool
	// An organization source clashes with any source of the organization;
	// a workspace source with its workspace's and the organization's.
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sources WHERE org_id = $1 AND slug = $2 AND id <> $3
		AND ($4::bigint IS NULL OR workspace_id IS NULL OR workspace_id = $4))`, orgID, slug, exceptID, workspaceID).Scan(&taken)
	if err != nil {
		return err
	}
	if taken {
		return ErrNamespaceTaken
	}
	return nil
}

// inPgxTx runs fn in a pgx transaction, for COPY and advisory locks.
func (s *Store) inPgxTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	return translate(tx.Commit(ctx))
}

// Source loads one of an organization's sources.
func (s *Store) Source(ctx context.Context, orgID int64, id string) (Source, error) {
	var src Source
	err := s.db.GetContext(ctx, &src, `SELECT `+sourceColumns+sourceFrom+` WHERE s.org_id = $1 AND s.id = $2`, orgID, id)
	return src, translate(err)
}

// SourceFilter narrows and orders a list of sources.
type SourceFilter struct {
	// WorkspaceID lists the workspace's sources and the organization's;
	// nil lists only the organization's.
	WorkspaceID *int64
	Query       string // name contains, case-insensitive
	Type        string
	State       string
	Scope       string
	// Sort is name, type, state, tools or refreshed.
	Sort string
}

// Sources lists the sources a workspace (or the organization) sees.
func (s *Store) Sources(ctx context.Context, orgID int64, f SourceFilter) ([]Source, error) {
	where := []string{"s.org_id = $1"}
	args := []any{orgID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.WorkspaceID != nil {
		where = append(where, "(s.workspace_id IS NULL OR s.workspace_id = "+arg(*f.WorkspaceID)+")")
	} else {
		where = append(where, "s.workspace_id IS NULL")
	}
	if f.Query != "" {
		where = append(where, "s.name ILIKE '%' || "+arg(escapeLike(f.Query))+" || '%'")
	}
	if f.Type != "" {
		where = append(where, "s.type = "+arg(f.Type))
	}
	if f.State != "" {
		where = append(where, "s.state = "+arg(f.State))
	}
	if f.Scope != "" {
		where = append(where, "s.scope = "+arg(f.Scope))
	}
	order := map[string]string{
		"type":      "s.type, lower(s.name)",
		"state":     "s.state, lower(s.name)",
		"tools":     "s.tool_count DESC, lower(s.name)",
		"refreshed": "s.last_refreshed_at DESC NULLS LAST, lower(s.name)",
	}[f.Sort]
	if order == "" {
		order = "lower(s.name), s.id"
	}
	out := []Source{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+sourceColumns+sourceFrom+` WHERE `+strings.Join(where, " AND ")+` ORDER BY `+order, args...)
	return out, err
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// SourceUpdate is what editing a source changes.
type SourceUpdate struct {
	Name            string
	Slug            string
	Config          json.RawMessage
	Enabled         bool
	AuthFingerprint string
}

// UpdateSource changes a source and marks it queued for a refresh.
func (s *Store) UpdateSource(ctx context.Context, orgID int64, id string, workspaceID *int64, u SourceUpdate) (Source, error) {
	err := s.inPgxTx(ctx, func(tx pgx.Tx) error {
		if err := lockNamespaces(ctx, tx, orgID, workspaceID, u.Slug, id); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE sources SET name = $3, slug = $4, config = $5, enabled = $6, auth_fingerprint = $7,
			state = 'queued', updated_at = now() WHERE org_id = $1 AND id = $2`, orgID, id, u.Name, u.Slug, u.Config, u.Enabled, u.AuthFingerprint)
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return Source{}, err
	}
	return s.Source(ctx, orgID, id)
}

// DeleteSource removes a source and its tools.
func (s *Store) DeleteSource(ctx context.Context, orgID int64, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM sources WHERE org_id = $1 AND id = $2`, orgID, id)
	return oneRow(res, err)
}

// MarkSource sets a source's state (queued, loading, indexing).
func (s *Store) MarkSource(ctx context.Context, orgID int64, id, state string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sources SET state = $3 WHERE org_id = $1 AND id = $2`, orgID, id, state)
	return oneRow(res, err)
}

// SourceTool is a stored tool.
type SourceTool struct {
	SourceID        string          `db:"source_id"`
	Path            string          `db:"path"`
	Name            string          `db:"name"`
	Aliases         Strings         `db:"aliases"`
	Title           string          `db:"title"`
	Description     string          `db:"description"`
	InputSchema     json.RawMessage `db:"input_schema"`
	OutputSchema    json.RawMessage `db:"output_schema"`
	Annotations     json.RawMessage `db:"annotations"`
	DefaultApproval string          `db:"default_approval"`
	Ref             json.RawMessage `db:"ref"`
}

// DiscoveryResult is what a successful discovery stores with the source.
type DiscoveryResult struct {
	SpecHash    string
	ETag        string
	BaseURL     string
	Server      string
	Warnings    json.RawMessage
	AuthProfile json.RawMessage
	Quality     json.RawMessage
	DiscoveryMS int
	Tools       []SourceTool
}

// SaveDiscovery replaces a source's tools and marks it ready, in one
// transaction: readers see the old tool set or the new one, never a mix.
func (s *Store) SaveDiscovery(ctx context.Context, orgID int64, id string, r DiscoveryResult) error {
	return s.inPgxTx(ctx, func(tx pgx.Tx) error {
		var locked string
		if err := tx.QueryRow(ctx, `SELECT id FROM sources WHERE org_id = $1 AND id = $2 FOR UPDATE`, orgID, id).Scan(&locked); err != nil {
			return translate(err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM source_tools WHERE source_id = $1`, id); err != nil {
			return err
		}
		rows := make([][]any, len(r.Tools))
		for i, t := range r.Tools {
			var out any
			if len(t.OutputSchema) > 0 {
				out = t.OutputSchema
			}
			aliases := t.Aliases
			if aliases == nil {
				aliases = []string{}
			}
			rows[i] = []any{id, t.Path, t.Name, []string(aliases), t.Title, t.Description, t.InputSchema, out, t.Annotations, t.DefaultApproval, t.Ref}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"source_tools"},
			[]string{"source_id", "path", "name", "aliases", "title", "description", "input_schema", "output_schema", "annotations", "default_approval", "ref"},
			pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("store tools: %w", translate(err))
		}
		_, err := tx.Exec(ctx, `UPDATE sources SET state = 'ready', error = '', warnings = $3, spec_hash = $4, etag = $5,
			base_url = $6, server = $7, auth_profile = $8, quality = $9, tool_count = $10, discovery_ms = $11,
			last_refreshed_at = now(), last_success_at = now() WHERE org_id = $1 AND id = $2`,
			orgID, id, r.Warnings, r.SpecHash, r.ETag, r.BaseURL, r.Server, nullJSON(r.AuthProfile), nullJSON(r.Quality), len(r.Tools), r.DiscoveryMS)
		return err
	})
}

// MarkUnchanged records a refresh that found the spec unchanged (ETag).
func (s *Store) MarkUnchanged(ctx context.Context, orgID int64, id string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sources SET state = 'ready', error = '', last_refreshed_at = now(), last_success_at = now()
		WHERE org_id = $1 AND id = $2`, orgID, id)
	return oneRow(res, err)
}

// RecordFailure marks a failed refresh; the last good tools stay.
func (s *Store) RecordFailure(ctx context.Context, orgID int64, id, message string, discoveryMS int) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sources SET state = 'failed', error = $3, discovery_ms = $4,
		last_refreshed_at = now(), last_failure_at = now() WHERE org_id = $1 AND id = $2`, orgID, id, message, discoveryMS)
	return oneRow(res, err)
}

// Present reports whether a JSON column holds a value (NULL reads as null).
func Present(b json.RawMessage) bool { return len(b) > 0 && string(b) != "null" }

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}

// Tools lists a source's tools by path, a page at a time.
func (s *Store) Tools(ctx context.Context, orgID int64, sourceID string, limit, offset int) ([]SourceTool, error) {
	out := []SourceTool{}
	err := s.db.SelectContext(ctx, &out, `SELECT t.source_id, t.path, t.name, t.aliases, t.title, t.description, t.input_schema,
		COALESCE(t.output_schema, 'null') AS output_schema, t.annotations, t.default_approval, t.ref
		FROM source_tools t JOIN sources s ON s.id = t.source_id
		WHERE s.org_id = $1 AND t.source_id = $2 ORDER BY t.path LIMIT $3 OFFSET $4`, orgID, sourceID, limit, offset)
	return out, err
}
