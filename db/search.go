package db

import (
	"context"
	"fmt"
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
	term := func(w string) string {
		if len([]rune(w)) >= 3 {
			return w + ":*"
		}
		return w
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range SplitWords(text) {
		if stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		alts := []string{term(w)}
		for _, syn := range synonyms[w] {
			words := SplitWords(syn)
			for i, sw := range words {
				words[i] = term(sw)
			}
			if len(words) > 1 {
				alts = append(alts, "("+strings.Join(words, " & ")+")")
			} else if len(words) == 1 {
				alts = append(alts, words[0])
			}
		}
		out = append(out, strings.Join(alts, " | "))
	}
	return out
}

// SearchTools is the PostgreSQL fallback of tool search. Candidates are the
// tools whose tsv (path, name, alias and parameter words with weight A, the
// description stemmed in English with weight B) matches any word of the
// text or one of its synonyms, plus those pg_trgm finds similar to the text,
// so a typo still finds something. They rank by how many of the text's
// words they match, then by how many of them the description's first line
// (its summary) holds, then by cover density and trigram similarity, and
// last the shorter, more general path first. Empty text lists tools by
// path. It returns a page of hits and the total.
func (s *Store) SearchTools(ctx context.Context, q ToolSearch) ([]ToolHit, int, error) {
	where := []string{"s.org_id = $1", "(s.workspace_id = $2 OR s.scope = 'organization')"}
	args := []any{q.OrgID, q.WorkspaceID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if !q.IncludeDisabled {
		where = append(where, "s.enabled")
	}
	if q.SourceID != "" {
		where = append(where, "t.source_id = "+arg(q.SourceID))
	}
	if q.Type != "" {
		where = append(where, "s.type = "+arg(q.Type))
	}
	if q.Approval != "" {
		where = append(where, "t.default_approval = "+arg(q.Approval))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	score, order := "0", "t.path, t.source_id"
	from := " FROM source_tools t JOIN sources s ON s.id = t.source_id"
	if cs := concepts(q.Text, q.Synonyms); len(cs) > 0 {
		plain := arg(strings.Join(SplitWords(q.Text), " "))
		// q.tq is any concept; q.cq holds each concept's query.
		from += ` CROSS JOIN (SELECT to_tsquery('simple', a) || to_tsquery('english', a) AS tq,
				(SELECT array_agg(to_tsquery('simple', c) || to_tsquery('english', c)) FROM unnest(CAST(` + arg(cs) + ` AS text[])) c) AS cq
			FROM (SELECT ` + arg("("+strings.Join(cs, ") | (")+")") + ` AS a) x) q
			CROSS JOIN LATERAL (SELECT to_tsvector('english', split_part(t.description, E'\n', 1)) AS sv) sm
			CROSS JOIN LATERAL (SELECT
				(SELECT count(*) FROM unnest(q.cq) c WHERE t.tsv @@ c) AS matched,
				(SELECT count(*) FROM unnest(q.cq) c WHERE sm.sv @@ c) AS in_summary) m`
		where = append(where, "(t.tsv @@ q.tq OR "+plain+" <% t.search_text)")
		score = "m.matched + 0.5 * m.in_summary + ts_rank_cd(t.tsv, q.tq, 1) + word_similarity(" + plain + ", t.search_text)"
		order = "m.matched DESC, m.in_summary DESC, length(sm.sv), score DESC, length(t.path), t.path, t.source_id"
	}
	type row struct {
		ToolHit
		Total int `db:"total"`
	}
	var rows []row
	err := s.db.SelectContext(ctx, &rows, `SELECT t.source_id, s.name AS source_name, s.type, t.path, t.description,
		t.default_approval, s.enabled, CAST(`+score+` AS float8) AS score, count(*) OVER () AS total`+from+`
		WHERE `+strings.Join(where, " AND ")+` ORDER BY `+order+` LIMIT `+arg(limit)+` OFFSET `+arg(max(q.Offset, 0)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("search tools: %w", err)
	}
	hits := make([]ToolHit, len(rows))
	total := 0
	for i, r := range rows {
		hits[i] = r.ToolHit
		total = r.Total
	}
	if len(rows) == 0 && q.Offset > 0 {
		// Past the last page: count separately so the total stays right.
		if err := s.db.GetContext(ctx, &total, `SELECT count(*) FROM (`+countQuery(from, where)+`) c`, args[:len(args)-2]...); err != nil {
			return nil, 0, fmt.Errorf("count tools: %w", err)
		}
	}
	return hits, total, nil
}

func countQuery(from string, where []string) string {
	return `SELECT 1` + from + ` WHERE ` + strings.Join(where, " AND ")
}
