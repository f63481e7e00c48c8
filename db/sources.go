package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"
)

// Source is a registered tool source.
type Source struct {
	ID                string          `db:"id"`
	OrgID             int64           `db:"org_id"`
	WorkspaceID       *int64          `db:"workspace_id"`
	WorkspaceSlug     *string         `db:"workspace_slug"`
	Scope             string          `db:"scope"`
	Name              string          `db:"name"`
	Slug              string          `db:"slug"`
	Type              string          `db:"type"`
	ConfigVersion     int             `db:"config_version"`
	Config            json.RawMessage `db:"config"`
	Enabled           bool            `db:"enabled"`
	State             string          `db:"state"`
	Error             string          `db:"error"`
	Warnings          json.RawMessage `db:"warnings"`
	SpecHash          string          `db:"spec_hash"`
	AuthFingerprint   string          `db:"auth_fingerprint"`
	ETag              string          `db:"etag"`
	BaseURL           string          `db:"base_url"`
	Server            string          `db:"server"`
	AuthProfile       json.RawMessage `db:"auth_profile"`
	Quality           json.RawMessage `db:"quality"`
	ToolCount         int             `db:"tool_count"`
	DiscoveryMS       int             `db:"discovery_ms"`
	Generation        int64           `db:"generation"`
	IndexedGeneration int64           `db:"indexed_generation"`
	Signature         string          `db:"signature"`
	IndexError        string          `db:"index_error"`
	LastRefreshedAt   *time.Time      `db:"last_refreshed_at"`
	LastSuccessAt     *time.Time      `db:"last_success_at"`
	LastFailureAt     *time.Time      `db:"last_failure_at"`
	CreatedAt         time.Time       `db:"created_at"`
	UpdatedAt         time.Time       `db:"updated_at"`
	// ApprovalOverride is "auto" or "required" to override the default
	// approval of every tool of the source; nil keeps each tool's own.
	ApprovalOverride *string `db:"approval_override"`
	// RefreshRequestedAt is when the last refresh was asked for.
	RefreshRequestedAt *time.Time `db:"refresh_requested_at"`
}

const sourceColumns = `s.id, s.org_id, s.workspace_id, w.slug AS workspace_slug, s.scope, s.name, s.slug, s.type,
	s.config_version, s.config, s.enabled, s.state, s.error, s.warnings, s.spec_hash, s.auth_fingerprint, s.etag,
	s.base_url, s.server, COALESCE(s.auth_profile, 'null') AS auth_profile, COALESCE(s.quality, 'null') AS quality, s.tool_count, s.discovery_ms, s.last_refreshed_at,
	s.last_success_at, s.last_failure_at, s.created_at, s.updated_at, s.generation, s.indexed_generation, s.signature, s.index_error,
	s.approval_override, s.refresh_requested_at`

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
	// ActorID is who creates it, for the audit event; 0 for toolgate itself.
	ActorID int64
}

// CreateSource inserts a source in state queued, and its source.created
// audit event. The organization is locked for the transaction so
// namespaces stay unique across scopes.
func (s *Store) CreateSource(ctx context.Context, in NewSource) (Source, error) {
	err := s.inPgxTx(ctx, func(tx pgx.Tx) error {
		if err := lockNamespaces(ctx, tx, in.OrgID, in.WorkspaceID, in.Slug, ""); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO sources (id, org_id, workspace_id, scope, name, slug, type, config_version, config, enabled, auth_fingerprint)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			in.ID, in.OrgID, in.WorkspaceID, in.Scope, in.Name, in.Slug, in.Type, in.ConfigVersion, in.Config, in.Enabled, in.AuthFingerprint)
		if err != nil {
			return translate(err)
		}
		return addAuditPgx(ctx, tx, sourceAudit(in.OrgID, in.WorkspaceID, in.ID, in.Name, in.Type, in.Scope, in.Enabled, in.ActorID, "source.created"))
	})
	if err := s.gatewayChanged(in.OrgID, err); err != nil {
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
	// ActorID is who changes it, for the audit event; 0 for toolgate itself.
	ActorID int64
}

// UpdateSource changes a source and marks it queued for a refresh; its
// source.updated audit event commits with it.
func (s *Store) UpdateSource(ctx context.Context, orgID int64, id string, workspaceID *int64, u SourceUpdate) (Source, error) {
	err := s.inPgxTx(ctx, func(tx pgx.Tx) error {
		if err := lockNamespaces(ctx, tx, orgID, workspaceID, u.Slug, id); err != nil {
			return err
		}
		var typ, scope string
		err := tx.QueryRow(ctx, `UPDATE sources SET name = $3, slug = $4, config = $5, enabled = $6, auth_fingerprint = $7,
			state = 'queued', updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING type, scope`,
			orgID, id, u.Name, u.Slug, u.Config, u.Enabled, u.AuthFingerprint).Scan(&typ, &scope)
		if err != nil {
			return translate(err)
		}
		return addAuditPgx(ctx, tx, sourceAudit(orgID, workspaceID, id, u.Name, typ, scope, u.Enabled, u.ActorID, "source.updated"))
	})
	if err := s.gatewayChanged(orgID, err); err != nil {
		return Source{}, err
	}
	return s.Source(ctx, orgID, id)
}

// SetSourceApprovalOverride sets or clears (nil) the default approval of
// every tool of a source. Like a policy write it bumps the organization's
// policy version and notifies PolicyChannel, since it changes decisions.
func (s *Store) SetSourceApprovalOverride(ctx context.Context, orgID int64, id string, override *string) (Source, error) {
	err := s.inPolicyTx(ctx, orgID, nil, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sources SET approval_override = $3, updated_at = now()
			WHERE org_id = $1 AND id = $2`, orgID, id, override)
		return oneRow(res, err)
	})
	if err != nil {
		return Source{}, err
	}
	return s.Source(ctx, orgID, id)
}

// DeleteSource removes a source and its tools, and records who did
// (actorID, 0 for toolgate itself).
func (s *Store) DeleteSource(ctx context.Context, orgID int64, id string, actorID int64) error {
	err := s.inPgxTx(ctx, func(tx pgx.Tx) error { return DeleteSourceTx(ctx, tx, orgID, id, actorID) })
	return s.gatewayChanged(orgID, err)
}

// Answering names the refresh request a refresh works on: the source's
// RefreshRequestedAt as the refresh loaded it. A state the refresh writes
// stays 'queued' when a newer request has landed since: the worker runs
// the refresh again for it, and until then the source's tools come from
// a configuration older than the one saved. A nil *Answering writes the
// state as given.
type Answering struct{ RequestedAt *time.Time }

// stateUnlessRequested is the SQL that sets state to expr unless a refresh
// was requested after the one answered; $n is whether to check and $n+1
// the request answered.
func stateUnlessRequested(expr string, n int) string {
	return fmt.Sprintf(`state = CASE WHEN CAST($%d AS boolean) AND refresh_requested_at IS DISTINCT FROM CAST($%d AS timestamptz)
		THEN 'queued' ELSE %s END`, n, n+1, expr)
}

// args are the two parameters stateUnlessRequested reads.
func (a *Answering) args() (check bool, requestedAt *time.Time) {
	if a == nil {
		return false, nil
	}
	return true, a.RequestedAt
}

// MarkLoading marks a source whose refresh has started.
func (s *Store) MarkLoading(ctx context.Context, orgID int64, id string, a *Answering) error {
	check, at := a.args()
	res, err := s.db.ExecContext(ctx, `UPDATE sources SET `+stateUnlessRequested(`'loading'`, 3)+`
		WHERE org_id = $1 AND id = $2`, orgID, id, check, at)
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
	Params          Strings         `db:"params"`
	DocHash         string          `db:"doc_hash"`
}

// DiscoveryResult is what a successful discovery stores with the source.
type DiscoveryResult struct {
	// Signature summarizes the inputs of the tool set (spec hash, auth
	// fingerprint, config version, enabled, updated_at); an unchanged
	// signature means there is nothing to write.
	Signature   string
	SpecHash    string
	ETag        string
	BaseURL     string
	Server      string
	Warnings    json.RawMessage
	AuthProfile json.RawMessage
	Quality     json.RawMessage
	DiscoveryMS int
	Tools       []SourceTool
	// Answering is the refresh request the discovery answers; see
	// [Answering].
	Answering *Answering
}

// Written reports what SaveDiscovery did.
type Written struct {
	// Generation is the source's tool-set generation after the write.
	Generation int64
	// Unchanged is set when the signature matched and nothing was written.
	Unchanged bool
	// Previous maps each path of the replaced generation to its doc_hash,
	// so the search index can be updated by difference.
	Previous map[string]string
}

// SaveDiscovery writes a source's new tool set as a new generation and
// marks it indexing, in one transaction: readers see the old generation or
// the new one, never a mix. The source row is locked, so two workers racing
// on one source write one generation: the second finds the signature
// unchanged and writes nothing.
func (s *Store) SaveDiscovery(ctx context.Context, orgID int64, id string, r DiscoveryResult) (Written, error) {
	var w Written
	err := s.inPgxTx(ctx, func(tx pgx.Tx) error {
		check, at := r.Answering.args()
		var signature, state string
		if err := tx.QueryRow(ctx, `SELECT signature, generation, state FROM sources WHERE org_id = $1 AND id = $2 FOR UPDATE`,
			orgID, id).Scan(&signature, &w.Generation, &state); err != nil {
			return translate(err)
		}
		if r.Signature != "" && r.Signature == signature && state != "failed" {
			w.Unchanged = true
			_, err := tx.Exec(ctx, `UPDATE sources SET `+stateUnlessRequested(`CASE WHEN indexed_generation = generation THEN 'ready' ELSE 'indexing' END`, 2)+`,
				error = '', last_refreshed_at = now(), last_success_at = now() WHERE id = $1`, id, check, at)
			return err
		}
		w.Previous = map[string]string{}
		rows, err := tx.Query(ctx, `SELECT path, doc_hash FROM source_tools WHERE source_id = $1`, id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var path, hash string
			if err := rows.Scan(&path, &hash); err != nil {
				rows.Close()
				return err
			}
			w.Previous[path] = hash
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM source_tools WHERE source_id = $1`, id); err != nil {
			return err
		}
		cols := []string{"source_id", "path", "name", "aliases", "title", "description", "input_schema", "output_schema",
			"annotations", "default_approval", "ref", "params", "doc_hash", "search_text"}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"source_tools"}, cols, pgx.CopyFromSlice(len(r.Tools), func(i int) ([]any, error) {
			t := r.Tools[i]
			var out any
			if Present(t.OutputSchema) {
				out = t.OutputSchema
			}
			aliases, params := []string(t.Aliases), []string(t.Params)
			if aliases == nil {
				aliases = []string{}
			}
			if params == nil {
				params = []string{}
			}
			return []any{id, t.Path, t.Name, aliases, t.Title, t.Description, t.InputSchema, out, t.Annotations,
				t.DefaultApproval, t.Ref, params, t.DocHash, SearchText(t.Path, t.Name, aliases, params)}, nil
		})); err != nil {
			return fmt.Errorf("store tools: %w", translate(err))
		}
		w.Generation++
		_, err = tx.Exec(ctx, `UPDATE sources SET `+stateUnlessRequested(`'indexing'`, 14)+`, error = '', warnings = $3, spec_hash = $4, etag = $5,
			base_url = $6, server = $7, auth_profile = $8, quality = $9, tool_count = $10, discovery_ms = $11,
			signature = $12, generation = $13, last_refreshed_at = now(), last_success_at = now() WHERE org_id = $1 AND id = $2`,
			orgID, id, r.Warnings, r.SpecHash, r.ETag, r.BaseURL, r.Server, nullJSON(r.AuthProfile), nullJSON(r.Quality),
			len(r.Tools), r.DiscoveryMS, r.Signature, w.Generation, check, at)
		return err
	})
	return w, s.gatewayChanged(orgID, err)
}

// MarkIndexed records that the search index holds a generation, and makes
// the source ready unless a newer generation was written meanwhile.
func (s *Store) MarkIndexed(ctx context.Context, id string, generation int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE sources SET indexed_generation = $2, index_error = '',
		state = CASE WHEN state = 'indexing' THEN 'ready' ELSE state END
		WHERE id = $1 AND generation = $2`, id, generation)
	return err
}

// MarkIndexFailed records why the index could not be updated; the source's
// tools are still served from PostgreSQL and the reconcile retries.
func (s *Store) MarkIndexFailed(ctx context.Context, id string, generation int64, message string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE sources SET index_error = $3,
		state = CASE WHEN state = 'indexing' THEN 'ready' ELSE state END
		WHERE id = $1 AND generation = $2`, id, generation, message)
	return err
}

// Unindexed lists sources whose index lags behind PostgreSQL, leaving out
// those a refresh is writing right now (unless it stalled for 10 minutes).
func (s *Store) Unindexed(ctx context.Context, limit int) ([]Source, error) {
	out := []Source{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+sourceColumns+sourceFrom+`
		WHERE s.indexed_generation <> s.generation
		AND NOT (s.state IN ('loading', 'indexing') AND s.last_refreshed_at > now() - interval '10 minutes')
		ORDER BY s.updated_at LIMIT $1`, limit)
	return out, err
}

// SourcesOf lists every source of an organization (0 = every organization),
// for reindexing.
func (s *Store) SourcesOf(ctx context.Context, orgID int64) ([]Source, error) {
	out := []Source{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+sourceColumns+sourceFrom+`
		WHERE $1 = 0 OR s.org_id = $1 ORDER BY s.org_id, s.id`, orgID)
	return out, err
}

// DueForRefresh lists sources that are fetched from a URL or a remote
// server and were not refreshed within the interval.
func (s *Store) DueForRefresh(ctx context.Context, olderThan time.Time) ([]Source, error) {
	out := []Source{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+sourceColumns+sourceFrom+`
		WHERE s.enabled AND s.state NOT IN ('queued', 'loading', 'indexing')
		AND (s.last_refreshed_at IS NULL OR s.last_refreshed_at < $1)
		AND ((s.type = 'openapi' AND jsonb_typeof(s.config->'spec') = 'string' AND s.config->>'spec' ~ '^https?://')
		  OR (s.type = 'mcp' AND s.config->>'transport' IN ('streamable-http', 'sse'))
		  OR (s.type = 'graphql' AND COALESCE(s.config->>'schema', '') = ''))
		ORDER BY s.last_refreshed_at NULLS FIRST`, olderThan)
	return out, err
}

// AllTools lists every tool of a source, for reindexing and rewrites.
func (s *Store) AllTools(ctx context.Context, orgID int64, sourceID string) ([]SourceTool, error) {
	return s.Tools(ctx, orgID, sourceID, 1<<30, 0)
}

// MarkUnchanged records a refresh that found the spec unchanged (ETag).
func (s *Store) MarkUnchanged(ctx context.Context, orgID int64, id string, a *Answering) error {
	check, at := a.args()
	res, err := s.db.ExecContext(ctx, `UPDATE sources SET error = '', last_refreshed_at = now(), last_success_at = now(),
		`+stateUnlessRequested(`CASE WHEN indexed_generation = generation THEN 'ready' ELSE 'indexing' END`, 3)+`
		WHERE org_id = $1 AND id = $2`, orgID, id, check, at)
	return oneRow(res, err)
}

// RecordFailure marks a failed refresh; the last good tools stay.
func (s *Store) RecordFailure(ctx context.Context, orgID int64, id, message string, discoveryMS int, a *Answering) error {
	check, at := a.args()
	res, err := s.db.ExecContext(ctx, `UPDATE sources SET `+stateUnlessRequested(`'failed'`, 5)+`, error = $3, discovery_ms = $4,
		last_refreshed_at = now(), last_failure_at = now() WHERE org_id = $1 AND id = $2`, orgID, id, message, discoveryMS, check, at)
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
		COALESCE(t.output_schema, 'null') AS output_schema, t.annotations, t.default_approval, t.ref, t.params, t.doc_hash
		FROM source_tools t JOIN sources s ON s.id = t.source_id
		WHERE s.org_id = $1 AND t.source_id = $2 ORDER BY t.path LIMIT $3 OFFSET $4`, orgID, sourceID, limit, offset)
	return out, err
}

// MarkQueuedTx shows that a refresh waits for a worker, in the transaction
// that enqueues it.
func MarkQueuedTx(ctx context.Context, tx pgx.Tx, orgID int64, id string) error {
	tag, err := tx.Exec(ctx, `UPDATE sources SET state = 'queued', refresh_requested_at = clock_timestamp()
		WHERE org_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// InPgxTx runs fn in a pgx transaction shared with River's inserts.
func (s *Store) InPgxTx(ctx context.Context, fn func(pgx.Tx) error) error { return s.inPgxTx(ctx, fn) }

// RefreshRequestedSince locks a source and reports whether a refresh was
// asked for after since; ErrNotFound when the source is gone. It runs in
// the transaction that completes a refresh job, so a request either lands
// before (and the job refreshes again) or after (and finds no running job).
func RefreshRequestedSince(ctx context.Context, tx pgx.Tx, id string, since time.Time) (bool, error) {
	var again bool
	err := tx.QueryRow(ctx, `SELECT COALESCE(refresh_requested_at > $2, false) FROM sources WHERE id = $1 FOR UPDATE`, id, since).Scan(&again)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, ErrNotFound
	}
	return again, err
}

// Now is the database's clock, which refresh requests are stamped with.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t, err
}

// DeleteSourceTx removes a source and its tools in a transaction that also
// enqueues removing its search documents.
func DeleteSourceTx(ctx context.Context, tx pgx.Tx, orgID int64, id string, actorID int64) error {
	var (
		workspaceID      *int64
		name, typ, scope string
		enabled          bool
	)
	err := tx.QueryRow(ctx, `DELETE FROM sources WHERE org_id = $1 AND id = $2 RETURNING workspace_id, name, type, scope, enabled`,
		orgID, id).Scan(&workspaceID, &name, &typ, &scope, &enabled)
	if err != nil {
		return translate(err)
	}
	return addAuditPgx(ctx, tx, sourceAudit(orgID, workspaceID, id, name, typ, scope, enabled, actorID, "source.deleted"))
}

// sourceAudit is a source's audit event: its name, type, scope and
// whether it is on, never its configuration (URLs and headers may carry
// what only its credential should).
func sourceAudit(orgID int64, workspaceID *int64, id, name, typ, scope string, enabled bool, actorID int64, action string) AuditEvent {
	return auditEvent(orgID, workspaceID, actorID, action, "source", id,
		map[string]any{"name": name, "type": typ, "scope": scope, "enabled": enabled})
}
