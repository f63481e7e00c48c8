package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/search"
)

// Search limits.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
	maxSuggestions     = 5
)

// Search finds tools of the enabled sources the caller's workspace sees,
// best first; sourceID, when set, keeps one source's. limit is clamped to
// 1..MaxSearchLimit, and 0 means DefaultSearchLimit.
func (g *Gateway) Search(ctx context.Context, c Caller, text string, limit int, sourceID string) ([]search.Hit, error) {
	switch {
	case limit <= 0:
		limit = DefaultSearchLimit
	case limit > MaxSearchLimit:
		limit = MaxSearchLimit
	}
	if g.opts.Index == nil {
		return nil, errors.New("search tools: the gateway has no search index")
	}
	res, err := g.opts.Index.Search(ctx, search.Query{OrgID: c.OrgID, WorkspaceID: c.WorkspaceID, Text: text,
		SourceID: sourceID, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("search tools: %w", err)
	}
	if res.Hits == nil {
		return []search.Hit{}, nil
	}
	return res.Hits, nil
}

// Describe finds a tool the caller's workspace sees by its path or one of
// its aliases. A tool of a disabled source, or none, is a [*NotFoundError]
// with suggestions from the workspace's own tools.
func (g *Gateway) Describe(ctx context.Context, c Caller, path string) (Tool, error) {
	t, err := g.opts.Store.ToolByPath(ctx, c.OrgID, c.WorkspaceID, path)
	if errors.Is(err, db.ErrNotFound) || err == nil && !t.SourceEnabled {
		return Tool{}, g.notFound(ctx, c, path)
	}
	if err != nil {
		return Tool{}, fmt.Errorf("look up tool %q: %w", path, err)
	}
	return toolOf(t), nil
}

// List is every tool of the enabled sources the caller's workspace sees
// (its own and its organization's), by path: what direct mode offers.
func (g *Gateway) List(ctx context.Context, c Caller) ([]Tool, error) {
	rows, err := g.opts.Store.WorkspaceTools(ctx, c.OrgID, c.WorkspaceID)
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	out := make([]Tool, len(rows))
	for i, t := range rows {
		out[i] = toolOf(t)
	}
	return out, nil
}

// RegistryVersion is a value that changes whenever the set of tools a
// workspace sees changes: a source added, removed, enabled, disabled or
// edited, or a discovery that wrote new tools. It costs one small query;
// the MCP endpoint polls it to tell sessions their tool list changed.
func (g *Gateway) RegistryVersion(ctx context.Context, orgID, workspaceID int64) (string, error) {
	v, err := g.opts.Store.RegistryVersion(ctx, orgID, workspaceID)
	if err != nil {
		return "", fmt.Errorf("registry version: %w", err)
	}
	return v, nil
}

// toolOf presents a stored tool.
func toolOf(t db.VisibleTool) Tool {
	out := Tool{
		Path:            t.Path,
		Aliases:         []string(t.Aliases),
		Title:           t.Title,
		Description:     t.Description,
		SourceID:        t.SourceID,
		SourceName:      t.SourceName,
		SourceType:      t.SourceType,
		InputSchema:     t.InputSchema,
		DefaultApproval: t.DefaultApproval,
	}
	if db.Present(t.OutputSchema) {
		out.OutputSchema = t.OutputSchema
	}
	if db.Present(t.Annotations) && string(t.Annotations) != "{}" {
		out.Annotations = t.Annotations
	}
	return out
}

// notFound is the error for a path the workspace does not see, with the
// closest tools it does see.
func (g *Gateway) notFound(ctx context.Context, c Caller, path string) *NotFoundError {
	return &NotFoundError{Path: path, Suggestions: g.suggest(ctx, c, path)}
}

// suggest searches the caller's workspace for the words of a path that
// named nothing, leaving the path itself out. A search that fails gives
// no suggestions rather than hiding the not-found.
func (g *Gateway) suggest(ctx context.Context, c Caller, path string) []string {
	words := pathWords(path)
	if words == "" || g.opts.Index == nil {
		return []string{}
	}
	res, err := g.opts.Index.Search(ctx, search.Query{OrgID: c.OrgID, WorkspaceID: c.WorkspaceID, Text: words, Limit: maxSuggestions + 1})
	if err != nil {
		g.opts.Logger.Warn("suggest tools", "error", err.Error())
		return []string{}
	}
	out := []string{}
	for _, h := range res.Hits {
		if h.Path != path && len(out) < maxSuggestions {
			out = append(out, h.Path)
		}
	}
	return out
}

// pathWords splits a path into the words a search matches:
// "petstore.getPetById" → "petstore get pet by id".
func pathWords(path string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(path)
	for i, r := range runes {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(runes[i-1]) || i+1 < len(runes) && unicode.IsLower(runes[i+1]) && unicode.IsUpper(runes[i-1])):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	if len(words) > 16 {
		words = words[:16]
	}
	return strings.Join(words, " ")
}
