// Package search finds tools. One small interface, [Index], has two
// implementations: Meilisearch, the primary, and a PostgreSQL fallback
// (full-text search plus trigram similarity over source_tools) used while
// Meilisearch is unreachable. Every query is confined to one organization
// and the sources one workspace sees.
package search

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Doc is one tool as the index stores it. Tools are stored once per source:
// a workspace finds its own sources' tools and its organization's through
// the filter, never through copies.
type Doc struct {
	// ID is stable for a source and path: see [DocID].
	ID    string `json:"id"`
	OrgID int64  `json:"org_id"`
	// WorkspaceID is 0 for organization sources.
	WorkspaceID     int64    `json:"workspace_id"`
	Scope           string   `json:"scope"`
	SourceID        string   `json:"source_id"`
	SourceName      string   `json:"source_name"`
	Type            string   `json:"type"`
	Path            string   `json:"path"`
	Name            string   `json:"name"`
	Aliases         []string `json:"aliases"`
	Description     string   `json:"description"`
	Params          []string `json:"params"`
	DefaultApproval string   `json:"default_approval"`
	Enabled         bool     `json:"enabled"`
}

// DocID is a tool's document id: Meilisearch allows only letters, digits,
// hyphens and underscores, so it is a hash of the source id and path.
func DocID(sourceID, path string) string {
	sum := sha256.Sum256([]byte(sourceID + "\x00" + path))
	return hex.EncodeToString(sum[:16])
}

// Hash is the content hash of a document, to update the index by difference.
func (d Doc) Hash() string {
	b, _ := json.Marshal(d)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Query is one search.
type Query struct {
	OrgID int64
	// WorkspaceID limits results to the workspace's sources and the
	// organization's; it is required (searches are always in a workspace).
	WorkspaceID int64
	Text        string
	// Optional filters.
	SourceID string
	Type     string
	Approval string
	// IncludeDisabled also finds tools of disabled sources (the console's
	// catalog shows them greyed); agents never see them.
	IncludeDisabled bool
	Limit, Offset   int
}

// Hit is one result.
type Hit struct {
	Path            string  `json:"path"`
	Description     string  `json:"description"`
	SourceID        string  `json:"source_id"`
	SourceName      string  `json:"source_name"`
	Type            string  `json:"type"`
	DefaultApproval string  `json:"default_approval"`
	Enabled         bool    `json:"enabled"`
	Score           float64 `json:"score"`
}

// Results are a page of hits.
type Results struct {
	Hits  []Hit `json:"hits"`
	Total int   `json:"total"`
	// Degraded is set when the PostgreSQL fallback answered.
	Degraded bool `json:"degraded"`
}

// Index searches tools.
type Index interface {
	Search(ctx context.Context, q Query) (Results, error)
}

// The implementations of Index.
var (
	_ Index = (*Meili)(nil)
	_ Index = Postgres{}
	_ Index = (*Fallback)(nil)
)
