package db

import "context"

// VisibleTool is a tool with the source it comes from.
type VisibleTool struct {
	SourceTool
	SourceName    string `db:"source_name"`
	SourceSlug    string `db:"source_slug"`
	SourceType    string `db:"source_type"`
	SourceScope   string `db:"source_scope"`
	SourceEnabled bool   `db:"source_enabled"`
}

// ToolByPath finds a tool a workspace sees by its path or one of its
// aliases, in the workspace's sources and its organization's.
func (s *Store) ToolByPath(ctx context.Context, orgID, workspaceID int64, path string) (VisibleTool, error) {
	var t VisibleTool
	err := s.db.GetContext(ctx, &t, `SELECT t.source_id, t.path, t.name, t.aliases, t.title, t.description, t.input_schema,
		COALESCE(t.output_schema, 'null') AS output_schema, t.annotations, t.default_approval, t.ref, t.params, t.doc_hash,
		s.name AS source_name, s.slug AS source_slug, s.type AS source_type, s.scope AS source_scope, s.enabled AS source_enabled
		FROM source_tools t JOIN sources s ON s.id = t.source_id
		WHERE s.org_id = $1 AND (s.workspace_id IS NULL OR s.workspace_id = $2)
		AND (t.path = $3 OR $3 = ANY (t.aliases))
		ORDER BY (t.path = $3) DESC, s.enabled DESC LIMIT 1`, orgID, workspaceID, path)
	return t, translate(err)
}
