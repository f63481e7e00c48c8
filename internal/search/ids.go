package search

import (
	"context"
	"encoding/json"

	"github.com/meilisearch/meilisearch-go"
)

// IDs lists the document ids Meilisearch holds for a source, so a reindex
// can add the current documents first and then remove only the stale ones:
// searches never see the source missing.
func (m *Meili) IDs(ctx context.Context, orgID int64, sourceID string) (map[string]bool, error) {
	ids := map[string]bool{}
	const page = 1000
	for offset := int64(0); ; offset += page {
		var res meilisearch.DocumentsResult
		err := m.index.GetDocumentsWithContext(ctx, &meilisearch.DocumentsQuery{
			Offset: offset, Limit: page, Fields: []string{"id"}, Filter: sourceFilter(orgID, sourceID)}, &res)
		if err != nil {
			return nil, wrap("list documents", err)
		}
		for _, hit := range res.Results {
			var id string
			if raw, ok := hit["id"]; ok {
				if err := json.Unmarshal(raw, &id); err == nil {
					ids[id] = true
				}
			}
		}
		if int64(len(res.Results)) < page {
			return ids, nil
		}
	}
}
