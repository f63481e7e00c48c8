package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/search"
)

// Search limits.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
	maxSuggestions     = 5
)

// Search finds tools of the enabled sources the caller's workspace sees,
// best first, leaving out those its policies deny the caller whatever the
// arguments; sourceID, when set, keeps one source's. limit is clamped to
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
	set, err := g.workspaceRules(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("search tools: %w", err)
	}
	// Rules may hide some hits: then read pages of the ranking, each a
	// little larger than what is still missing, until limit hits are
	// visible or the ranking ends. The bound keeps a workspace whose rules
	// hide nearly everything from reading its whole index per search.
	slack, pages := 0, 1
	if set.Len() > 0 {
		slack, pages = hiddenSlack, maxHiddenPages
	}
	hits := []search.Hit{}
	for page, offset := 0, 0; page < pages && len(hits) < limit; page++ {
		fetch := limit - len(hits) + slack
		res, err := g.opts.Index.Search(ctx, search.Query{OrgID: c.OrgID, WorkspaceID: c.WorkspaceID, Text: text,
			SourceID: sourceID, Limit: fetch, Offset: offset})
		if err != nil {
			return nil, fmt.Errorf("search tools: %w", err)
		}
		offset += len(res.Hits)
		visible := res.Hits
		if set.Len() > 0 && len(visible) > 0 {
			if visible, err = g.visibleHits(ctx, c, set, visible); err != nil {
				return nil, fmt.Errorf("search tools: %w", err)
			}
		}
		hits = append(hits, visible...)
		if len(res.Hits) < fetch {
			break // the ranking ended
		}
	}
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// hiddenSlack is how many more hits than still missing a search asks the
// index for when rules may hide some, and maxHiddenPages how many pages
// it reads at most: a search returns fewer than its limit only when the
// ranking has no more visible tools, or after that many pages.
const (
	hiddenSlack    = 20
	maxHiddenPages = 5
)

// visibleHits drops the hits set hides from c, reading what rules need of
// them in one query; a hit the database no longer holds is dropped too.
func (g *Gateway) visibleHits(ctx context.Context, c Caller, set *policy.Set, hits []search.Hit) ([]search.Hit, error) {
	refs := make([]db.ToolRef, len(hits))
	for i, h := range hits {
		refs[i] = db.ToolRef{SourceID: h.SourceID, Path: h.Path}
	}
	rows, err := g.opts.Store.ToolsByRef(ctx, c.OrgID, c.WorkspaceID, refs)
	if err != nil {
		return nil, err
	}
	byRef := make(map[db.ToolRef]db.ListedTool, len(rows))
	for _, r := range rows {
		byRef[db.ToolRef{SourceID: r.SourceID, Path: r.Path}] = r
	}
	pc, now := c.policyCaller(), time.Now()
	out := hits[:0:0]
	for _, h := range hits {
		r, ok := byRef[db.ToolRef{SourceID: h.SourceID, Path: h.Path}]
		if ok && !set.Hidden(listedPolicyTool(r), pc, now) {
			out = append(out, h)
		}
	}
	return out, nil
}

// Describe finds a tool the caller's workspace sees by its path or one of
// its aliases, with the caller's effective decision on it (Policy). A tool
// of a disabled source, one its policies deny the caller whatever the
// arguments, or none, is a [*NotFoundError] with suggestions from the
// workspace's own tools.
func (g *Gateway) Describe(ctx context.Context, c Caller, path string) (Tool, error) {
	t, err := g.callTool(ctx, c, path)
	if errors.Is(err, db.ErrNotFound) || err == nil && !t.SourceEnabled {
		return Tool{}, g.notFound(ctx, c, path)
	}
	if err != nil {
		return Tool{}, fmt.Errorf("look up tool %q: %w", path, err)
	}
	set, err := g.rules(ctx, c.OrgID, c.WorkspaceID, t.OrgPolicyVersion, t.WorkspacePolicyVersion)
	if err != nil {
		return Tool{}, err
	}
	pt, pc, now := callPolicyTool(&t, g.toolPlan(&t)), c.policyCaller(), time.Now()
	if set.Hidden(pt, pc, now) {
		return Tool{}, g.notFound(ctx, c, path)
	}
	out := toolOf(t.VisibleTool)
	out.Method = pt.Method
	if t.SourceApprovalOverride != nil {
		out.ApprovalOverride = *t.SourceApprovalOverride
	}
	out.Policy = policyNote(set.Decide(pt, pc, map[string]any{}, now))
	return out, nil
}

// policyNote says in a sentence what a call meets, before any condition
// on its arguments.
func policyNote(d policy.Decision) string {
	switch d.Effect {
	case policy.Allow:
		return "allowed: " + d.Reason
	case policy.RequireApproval:
		return "approval required (a person decides before it runs): " + d.Reason
	}
	return "denied: " + d.Reason
}

// List is every tool of the enabled sources the caller's workspace sees
// (its own and its organization's), by path, leaving out those its
// policies deny the caller whatever the arguments.
func (g *Gateway) List(ctx context.Context, c Caller) ([]Tool, error) {
	all, err := g.ListAll(ctx, c.OrgID, c.WorkspaceID)
	if err != nil {
		return nil, err
	}
	vis, err := g.Visibility(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	out := all[:0]
	for _, t := range all {
		if !vis.Hidden(t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// ListAll is every tool of the enabled sources a workspace sees, whoever
// asks: direct mode's shared list, which it filters per caller with
// [Gateway.Visibility].
func (g *Gateway) ListAll(ctx context.Context, orgID, workspaceID int64) ([]Tool, error) {
	rows, err := g.opts.Store.WorkspaceTools(ctx, orgID, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	out := make([]Tool, len(rows))
	for i, r := range rows {
		out[i] = toolOf(r.VisibleTool)
		out[i].Method = r.Method
		out[i].annotations = annotationsOf(r.Annotations)
		if r.SourceApprovalOverride != nil {
			out[i].ApprovalOverride, out[i].approvalOverride = *r.SourceApprovalOverride, r.SourceApprovalOverride
		}
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
	hits, err := g.Search(ctx, c, words, maxSuggestions+1, "")
	if err != nil {
		g.opts.Logger.Warn("suggest tools", "error", err.Error())
		return []string{}
	}
	out := []string{}
	for _, h := range hits {
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
