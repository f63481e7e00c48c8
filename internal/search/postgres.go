package search

import (
	"context"

	"github.com/toolgate/toolgate/db"
)

// Postgres searches tools in PostgreSQL, through [db.Store.SearchTools]:
// full-text search on source_tools' generated tsvector plus pg_trgm word
// similarity. It is the fallback while Meilisearch is unreachable and needs
// nothing but the database, which is the record anyway.
type Postgres struct{ Store *db.Store }

// Search runs a query with the same confinement as [Meili.Search].
func (p Postgres) Search(ctx context.Context, q Query) (Results, error) {
	hits, total, err := p.Store.SearchTools(ctx, db.ToolSearch{
		OrgID: q.OrgID, WorkspaceID: q.WorkspaceID, Text: q.Text,
		SourceID: q.SourceID, Type: q.Type, Approval: q.Approval, IncludeDisabled: q.IncludeDisabled,
		Limit: clampLimit(q.Limit), Offset: max(q.Offset, 0), Synonyms: synonyms,
	})
	if err != nil {
		return Results{}, err
	}
	out := Results{Hits: make([]Hit, len(hits)), Total: total}
	for i, h := range hits {
		out.Hits[i] = Hit{Path: h.Path, Description: h.Description, SourceID: h.SourceID, SourceName: h.SourceName,
			Type: h.Type, DefaultApproval: h.DefaultApproval, Enabled: h.Enabled, Score: h.Score}
	}
	return out, nil
}
