package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// SearchText is what the PostgreSQL fallback searches besides the
// description: the words of a tool's path, name, aliases and parameter
// names, lowercased and each kept once, in order of first appearance.
// Words are split at anything but letters and digits and at camelCase
// humps: "github.repos.list_for_org" and "github.repos.listForOrg" both
// give "github repos list for org". It has no dependencies so the writer of
// source_tools.search_text and the search package agree on it.
func SearchText(path, name string, aliases, params []string) string {
	seen := map[string]bool{}
	var words []string
	add := func(s string) {
		for _, w := range SplitWords(s) {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	add(path)
	add(name)
	for _, a := range aliases {
		add(a)
	}
	for _, p := range params {
		add(p)
	}
	return strings.Join(words, " ")
}

// SplitWords splits an identifier or a phrase into lowercase words: at
// every rune that is not a letter or digit, between a lowercase letter or
// digit and an uppercase one ("listForOrg"), and before the last capital
// of a run followed by a lowercase letter ("HTTPResponse" → "http",
// "response").
func SplitWords(s string) []string {
	var words []string
	runes := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			words = append(words, strings.ToLower(string(runes[start:end])))
		}
		start = -1
	}
	for i, r := range runes {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := runes[i-1]
		if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
			flush(i)
			start = i
		} else if unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(runes) && unicode.IsLower(runes[i+1]) {
			flush(i)
			start = i
		}
	}
	flush(len(runes))
	return words
}

// ToolSearch is one search of the PostgreSQL fallback. Like every search it
// is confined to one organization and the sources one workspace sees.
type ToolSearch struct {
	OrgID       int64
	WorkspaceID int64
	// Text is what the person or agent typed; empty lists tools by path.
	Text string
	// Optional filters.
	SourceID string
	Type     string
	Approval string
	// IncludeDisabled also finds tools of disabled sources.
	IncludeDisabled bool
	Limit, Offset   int
	// Synonyms widen a word of the text to other words ("open" to
	// "create"), the same list the Meilisearch index uses.
	Synonyms map[string][]string
}

// ToolHit is one tool found by [Store.SearchTools].
type ToolHit struct {
	SourceID        string  `db:"source_id"`
	SourceName      string  `db:"source_name"`
	Type            string  `db:"type"`
	Path            string  `db:"path"`
	Description     string  `db:"description"`
	DefaultApproval string  `db:"default_approval"`
	Enabled         bool    `db:"enabled"`
	Score           float64 `db:"score"`
}

// StopWords carry nothing in a search ("list all of the repositories"):
// the Meilisearch index ignores them and the fallback drops them from the
// text. Keep the list short and free of words tool names use.
var StopWords = []string{"a", "all", "an", "and", "any", "are", "at", "be", "by", "can", "do", "does", "entire",
	"for", "from", "how", "in", "is", "it", "its", "of", "on", "once", "or", "our", "please", "some", "that",
	"the", "this", "to", "we", "what", "which", "whole", "with", "you", "your"}

var stopWords = func() map[string]bool {
	m := make(map[string]bool, len(StopWords))
	for _, w := range StopWords {
		m[w] = true
	}
	return m
}()

// IsStopWord reports whether a word is one of [StopWords], ignoring case.
func IsStopWord(w string) bool { return stopWords[strings.ToLower(w)] }

// concepts turns search text into one tsquery text per distinct word, OR-ed
// with the word's synonyms: "open a pull request" with open → create gives
// "open:* | create:*", "pull:*", "request:*". Words are SplitWords output
// (letters and digits only), so the texts cannot carry tsquery operators;
// they are still passed as parameters, never spliced into SQL. Words of
// three letters or more match as prefixes, so "pull" finds "pulls" and
// "repo" finds "repos" in the unstemmed search_text.
func concepts(text string, synonyms map[string][]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range SplitWords(text) {
		if stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		// Single words, kept apart so one that is a prefix of another
		// covers it ("repos" covers "repository"), and phrases.
		words := []string{w}
		var phrases []string
		for _, syn := range synonyms[w] {
			if sw := SplitWords(syn); len(sw) > 1 {
				for i := range sw {
					sw[i] = prefixTerm(sw[i])
				}
				phrases = append(phrases, "("+strings.Join(sw, " & ")+")")
			} else if len(sw) == 1 {
				words = append(words, sw[0])
			}
		}
		var alts []string
		for _, a := range words {
			covered := false
			for _, b := range words {
				if b != a && len([]rune(b)) >= 3 && strings.HasPrefix(a, b) {
					covered = true
				}
			}
			if !covered && !slices.Contains(alts, prefixTerm(a)) {
				alts = append(alts, prefixTerm(a))
			}
		}
		out = append(out, strings.Join(append(alts, phrases...), " | "))
	}
	return out
}

// prefixTerm makes a word of three letters or more a prefix match.
func prefixTerm(w string) string {
	if len([]rune(w)) >= 3 {
		return w + ":*"
	}
	return w
}

// rerank is how many candidates beyond the page get the costlier second
// ranking (summary, cover density, trigram similarity).
const rerank = 40

// SearchTools is the PostgreSQL fallback of tool search.
//
// Candidates are the tools of the sources the workspace sees whose tsv
// (path, name, alias and parameter words with weight A, the description
// stemmed in English with weight B) matches any word of the text or one of
// its synonyms. They rank by how many of the text's words they match; the
// best of them (the page plus [rerank]) are then ordered by how many words
// the description's first line (its summary) holds, a shorter summary, cover
// density plus trigram word similarity, and a shorter, more general path.
// When no word matches at all, pg_trgm's word similarity finds tools close
// to the text, so a typo still finds something. Empty text lists tools by
// path. It returns a page of hits and the total.
func (s *Store) SearchTools(ctx context.Context, q ToolSearch) ([]ToolHit, int, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	offset := max(q.Offset, 0)
	cs := concepts(q.Text, q.Synonyms)
	if len(cs) == 0 {
		return s.searchQuery(ctx, q, limit, offset, nil, "")
	}
	hits, total, err := s.searchQuery(ctx, q, limit, offset, cs, "")
	if err != nil || total > 0 || offset > 0 {
		return hits, total, err
	}
	return s.searchQuery(ctx, q, limit, offset, nil, strings.Join(SplitWords(q.Text), " "))
}

// searchQuery runs one of the three searches: full text over the concepts,
// trigram similarity to typo, or (neither) the listing by path.
//
// Every one reads the tools of the visible sources through the primary key
// (source_id), source by source, and tests the text on those rows rather
// than asking the tsv index: a search's cost then follows what the
// workspace sees, not every tool of every organization, and common words
// ("list", "repository") would make the index return most of the table.
func (s *Store) searchQuery(ctx context.Context, q ToolSearch, limit, offset int, cs []string, typo string) ([]ToolHit, int, error) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	where := []string{"s.org_id = " + arg(q.OrgID), "(s.workspace_id = " + arg(q.WorkspaceID) + " OR s.scope = 'organization')"}
	if !q.IncludeDisabled {
		where = append(where, "s.enabled")
	}
	if q.SourceID != "" {
		where = append(where, "s.id = "+arg(q.SourceID))
	}
	if q.Type != "" {
		where = append(where, "s.type = "+arg(q.Type))
	}
	approval := ""
	if q.Approval != "" {
		approval = " AND t.default_approval = " + arg(q.Approval)
	}
	// visible is the rows of the tools the workspace sees, as t, with their
	// source as s.
	visible := ` FROM sources s CROSS JOIN LATERAL (SELECT t.source_id, t.path, t.tsv, t.description, t.search_text,
			t.default_approval FROM source_tools t WHERE t.source_id = s.id` + approval + `) t
		WHERE ` + strings.Join(where, " AND ")
	const sourceColumns = `t.source_id, s.name AS source_name, s.type, t.path, t.description, t.default_approval, s.enabled`
	var query string
	switch {
	case len(cs) > 0:
		// Each word's query is a scalar subquery, computed once.
		count := func(vector string) string {
			parts := make([]string, len(cs))
			for i, c := range cs {
				p := arg(c)
				parts[i] = "CAST(" + vector + " @@ (SELECT to_tsquery('simple', " + p + ") || to_tsquery('english', " + p + ")) AS int)"
			}
			return strings.Join(parts, " + ")
		}
		anyWord := arg("(" + strings.Join(cs, ") | (") + ")")
		plain := arg(strings.Join(SplitWords(q.Text), " "))
		// Stage one carries only keys, so the window and the sort over
		// every candidate stay small; OFFSET 0 keeps the planner from
		// copying matched into the WHERE clause, which would compute it
		// twice. Stage two reads the best candidates back by primary key.
		query = `WITH c AS MATERIALIZED (
			SELECT source_id, path, matched, count(*) OVER () AS total FROM (
				SELECT t.source_id, t.path, ` + count("t.tsv") + ` AS matched` + visible + `
				OFFSET 0) x
			WHERE matched > 0
			ORDER BY matched DESC, length(path), path, source_id
			LIMIT ` + arg(offset+limit+rerank) + `)
		SELECT ` + sourceColumns + `, CAST(c.matched + 0.5 * m.in_summary + m.rank AS float8) AS score, c.total
		FROM c JOIN source_tools t ON t.source_id = c.source_id AND t.path = c.path
		JOIN sources s ON s.id = t.source_id
		CROSS JOIN LATERAL (SELECT to_tsvector('english', split_part(t.description, E'\n', 1)) AS sv) sm
		CROSS JOIN LATERAL (SELECT ` + count("sm.sv") + ` AS in_summary,
			ts_rank_cd(t.tsv, (SELECT to_tsquery('simple', ` + anyWord + `) || to_tsquery('english', ` + anyWord + `)), 1)
			+ word_similarity(` + plain + `, t.search_text) AS rank) m
		ORDER BY c.matched DESC, m.in_summary DESC, length(sm.sv), m.rank DESC, length(t.path), t.path, t.source_id`
	case typo != "":
		p := arg(typo)
		query = `SELECT ` + sourceColumns + `, CAST(word_similarity(` + p + `, t.search_text) AS float8) AS score,
			count(*) OVER () AS total` + visible + ` AND ` + p + ` <% t.search_text
		ORDER BY score DESC, length(t.path), t.path, t.source_id`
	default:
		query = `SELECT ` + sourceColumns + `, CAST(0 AS float8) AS score, count(*) OVER () AS total` + visible + `
		ORDER BY t.path, t.source_id`
	}
	type row struct {
		ToolHit
		Total int `db:"total"`
	}
	var rows []row
	if err := s.db.SelectContext(ctx, &rows, query+` LIMIT `+arg(limit)+` OFFSET `+arg(offset), args...); err != nil {
		return nil, 0, fmt.Errorf("search tools: %w", err)
	}
	if len(rows) == 0 && offset > 0 {
		// Past the last page: the first row says the total.
		_, total, err := s.searchQuery(ctx, q, 1, 0, cs, typo)
		return []ToolHit{}, total, err
	}
	hits := make([]ToolHit, len(rows))
	total := 0
	for i, r := range rows {
		hits[i] = r.ToolHit
		total = r.Total
	}
	return hits, total, nil
}
