package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/meilisearch/meilisearch-go"

	"github.com/toolgate/toolgate/db"
)

// Limits of a search at this layer. Callers (the API, the MCP meta-tools)
// cap what they accept lower; this layer accepts up to MaxLimit.
const (
	DefaultLimit = 20
	MaxLimit     = 200
)

// batchSize is the most documents sent in one Meilisearch request.
const batchSize = 10_000

// taskPoll is how often a Meilisearch task is polled while waited for.
const taskPoll = 25 * time.Millisecond

// ErrUnavailable wraps a Meilisearch failure that says nothing about the
// request and everything about the server: it could not be reached, did not
// answer in time, answered 5xx, refused the key, or has lost the index.
// [Fallback] answers from PostgreSQL on such errors.
var ErrUnavailable = errors.New("meilisearch is unavailable")

// Meili is the tool index in Meilisearch. The master key it holds is used
// server-side only and never appears in results, errors or logs.
type Meili struct {
	client meilisearch.ServiceManager
	index  meilisearch.IndexManager
	uid    string
}

// NewMeili returns the index named index on the Meilisearch at url. It does
// not connect; [Meili.EnsureSettings] creates the index and applies the
// settings, [Meili.Health] checks the connection and the key.
func NewMeili(url, key, index string) *Meili {
	dialer := &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return withQuickAck(c), nil
		},
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
	// Retries stay off: a query that fails goes to the PostgreSQL fallback
	// at once, and the worker's reconcile retries failed writes.
	client := meilisearch.New(url, meilisearch.WithAPIKey(key),
		meilisearch.WithCustomClient(&http.Client{Transport: transport, Timeout: 2 * time.Minute}),
		meilisearch.DisableRetries())
	return &Meili{client: client, index: client.Index(index), uid: index}
}

// Close releases the client's idle connections.
func (m *Meili) Close() { m.client.Close() }

// IndexName is the name (uid) of the index.
func (m *Meili) IndexName() string { return m.uid }

// searchableAttributes are the fields searched, in the order of their
// weight (the "attribute" ranking rule): a word found in the path outranks
// the same word in the summary, the name, an alias, the description, the
// source's name and last the parameter names. summary is derived from the
// description (see indexedDoc): its first line is how an API says what an
// operation does ("Create a pull request"), which is how people ask for it,
// while the rest of a description is long and mentions everything.
var searchableAttributes = []string{"path", "summary", "name", "aliases", "description", "source_name", "params"}

// filterableAttributes are what every query filters on (organization,
// workspace or organization scope, enabled) and the catalog's filters.
var filterableAttributes = []string{"org_id", "workspace_id", "scope", "source_id", "type", "default_approval", "enabled"}

// rankingRules orders the results. words first: natural-language queries
// ("list the issues of a repository") are long and the tool that matches
// most of their words is the best bet. typo next, so an exact spelling
// beats a corrected one. proximity third, so "pull request" as a phrase
// beats "pull" and "request" far apart in a long description. attribute
// fourth: among otherwise equal matches, one in the path or name beats one
// in the description, the signal searchableAttributes encodes. sort is only
// used when the text is empty (the catalog lists by path) and must not
// override relevance when it is not. exactness last: whole-word matches
// break the remaining ties.
//
// A last, custom rule breaks the remaining ties for the more general tool,
// the one with fewer words in its path: "delete a repository" matches
// repos.delete and actions.delete_repo_secret equally well, and the first
// is what was asked for.
var rankingRules = []string{"words", "typo", "proximity", "attribute", "sort", "exactness", "path_words:asc"}

// synonyms bridge how people and agents phrase a request and how APIs name
// their operations. Meilisearch applies them at query time, one way (the
// key also finds the listed words). Keep them few and general; they are not
// a way to make one labelled query pass.
var synonyms = map[string][]string{
	// Abbreviations.
	"pr":   {"pull request", "pulls"},
	"prs":  {"pull requests", "pulls"},
	"repo": {"repository", "repos"},
	"org":  {"organization", "orgs"},
	"dir":  {"directory"},
	"env":  {"environment"},
	"ci":   {"actions", "workflow"},
	// REST APIs name collections in the plural or abbreviated ("repos",
	// "pulls", "orgs"); a query's words should reach them.
	"repository":    {"repos", "repo"},
	"repositories":  {"repos", "repository"},
	"pull request":  {"pulls"},
	"pull requests": {"pulls"},
	"organization":  {"orgs", "org"},
	"comment":       {"comments"},
	"file":          {"files"},
	// "My" and "me" are the caller: APIs say "the authenticated user".
	"my":       {"authenticated"},
	"me":       {"authenticated"},
	"mine":     {"authenticated"},
	"who am i": {"authenticated user"},
	"who":      {"people", "users"},
	// In Git a branch is a ref (refs/heads/<branch>): GitHub deletes and
	// creates branches through its references API.
	"branch": {"ref"},
	// Verbs people use for the operations APIs call create, get, list...
	"open":    {"create"},
	"make":    {"create"},
	"add":     {"create"},
	"new":     {"create"},
	"remove":  {"delete"},
	"show":    {"get", "list"},
	"print":   {"get", "show", "echo"},
	"fetch":   {"get"},
	"read":    {"get"},
	"change":  {"update"},
	"edit":    {"update"},
	"modify":  {"update"},
	"rename":  {"update", "move"},
	"find":    {"search"},
	"look":    {"search"},
	"several": {"multiple"},
	"many":    {"multiple"},
	"folder":  {"directory"},
}

// maxTotalHits bounds how far results can be paged: every tool a
// workspace sees, for the catalog's listing.
const maxTotalHits = 20_000

// indexSettings are the settings EnsureSettings applies.
func indexSettings() *meilisearch.Settings {
	return &meilisearch.Settings{
		SearchableAttributes: searchableAttributes,
		FilterableAttributes: filterableAttributes,
		// path sorts the catalog's listing when there is no text.
		SortableAttributes: []string{"path"},
		RankingRules:       rankingRules,
		// Everything is displayed: a Doc holds nothing secret.
		DisplayedAttributes: []string{"*"},
		// Tool paths are identifiers: split them at "_" and "." like at
		// spaces, so "list_for_org" is the words list, for and org.
		SeparatorTokens: []string{"_", "."},
		Synonyms:        synonyms,
		// Stop words are ignored in queries and documents: natural-language
		// queries are full of them ("list all of the repositories") and
		// they would otherwise count as words to match. The fallback drops
		// the same ones.
		StopWords: db.StopWords,
		// Typos on (Meilisearch's default word sizes: one typo from 5
		// letters, two from 9) but not on numbers, where a typo is another
		// value ("v3" is not "v2").
		TypoTolerance: &meilisearch.TypoTolerance{
			Enabled:             true,
			MinWordSizeForTypos: meilisearch.MinWordSizeForTypos{OneTypo: 5, TwoTypos: 9},
			DisableOnWords:      []string{},
			DisableOnAttributes: []string{},
			DisableOnNumbers:    true,
		},
		Pagination: &meilisearch.Pagination{MaxTotalHits: maxTotalHits},
	}
}

// EnsureSettings creates the index (primary key "id") if it is missing and
// applies the settings, waiting for both. It is idempotent and safe when
// several replicas start at once.
func (m *Meili) EnsureSettings(ctx context.Context) error {
	if _, err := m.client.GetIndexWithContext(ctx, m.uid); err != nil {
		if !isCode(err, "index_not_found") {
			return wrap("get index", err)
		}
		task, err := m.client.CreateIndexWithContext(ctx, &meilisearch.IndexConfig{Uid: m.uid, PrimaryKey: "id"})
		if err != nil {
			return wrap("create index", err)
		}
		if err := m.wait(ctx, "create index", task); err != nil && !isCode(err, "index_already_exists") {
			return err
		}
	}
	task, err := m.index.UpdateSettingsWithContext(ctx, indexSettings())
	if err != nil {
		return wrap("update settings", err)
	}
	return m.wait(ctx, "update settings", task)
}

// indexedDoc is a Doc as stored in Meilisearch, with the fields derived for
// ranking.
type indexedDoc struct {
	Doc
	// Summary is the description's first line or sentence without stop
	// words: "Create a pull request" is indexed as "Create pull request".
	Summary string `json:"summary"`
	// PathWords counts the words of the path, for the last ranking rule.
	PathWords int `json:"path_words"`
}

func indexed(docs []Doc) []indexedDoc {
	out := make([]indexedDoc, len(docs))
	for i, d := range docs {
		out[i] = indexedDoc{Doc: d, Summary: summary(d.Description), PathWords: len(db.SplitWords(d.Path))}
	}
	return out
}

// summary is the first line or sentence of a description, without stop
// words, at most 20 words.
func summary(description string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(description), "\n")
	if i := strings.Index(first, ". "); i >= 0 {
		first = first[:i]
	}
	var kept []string
	for _, w := range strings.Fields(strings.TrimSuffix(first, ".")) {
		if !db.IsStopWord(strings.Trim(w, ".,;:!?\"'()")) {
			kept = append(kept, w)
		}
		if len(kept) == 20 {
			break
		}
	}
	return strings.Join(kept, " ")
}

// DropIndex deletes the whole index and waits; a missing index is no error.
// EnsureSettings makes it again.
func (m *Meili) DropIndex(ctx context.Context) error {
	task, err := m.client.DeleteIndexWithContext(ctx, m.uid)
	if err != nil {
		return wrap("delete index", err)
	}
	if err := m.wait(ctx, "delete index", task); err != nil && !isCode(err, "index_not_found") {
		return err
	}
	return nil
}

// Upsert adds or replaces documents, in batches of at most 10,000, and
// waits until Meilisearch has indexed them. A failed task fails Upsert with
// Meilisearch's message.
func (m *Meili) Upsert(ctx context.Context, docs []Doc) error {
	pk := "id"
	var tasks []*meilisearch.TaskInfo
	for start := 0; start < len(docs); start += batchSize {
		batch := docs[start:min(start+batchSize, len(docs))]
		task, err := m.index.AddDocumentsWithContext(ctx, indexed(batch), &meilisearch.DocumentOptions{PrimaryKey: &pk})
		if err != nil {
			return wrap("add documents", err)
		}
		tasks = append(tasks, task)
	}
	for _, task := range tasks {
		if err := m.wait(ctx, "add documents", task); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes documents by id and waits.
func (m *Meili) Delete(ctx context.Context, ids []string) error {
	var tasks []*meilisearch.TaskInfo
	for start := 0; start < len(ids); start += batchSize {
		task, err := m.index.DeleteDocumentsWithContext(ctx, ids[start:min(start+batchSize, len(ids))], nil)
		if err != nil {
			return wrap("delete documents", err)
		}
		tasks = append(tasks, task)
	}
	for _, task := range tasks {
		if err := m.wait(ctx, "delete documents", task); err != nil {
			return err
		}
	}
	return nil
}

// DeleteWhere removes a source's documents, or with sourceID "" every
// document of the organization, and waits.
func (m *Meili) DeleteWhere(ctx context.Context, orgID int64, sourceID string) error {
	task, err := m.index.DeleteDocumentsByFilterWithContext(ctx, sourceFilter(orgID, sourceID), nil)
	if err != nil {
		return wrap("delete documents", err)
	}
	return m.wait(ctx, "delete documents", task)
}

// Count returns how many documents a source has, or with sourceID "" the
// whole organization (for the reconcile's checks and tests).
func (m *Meili) Count(ctx context.Context, orgID int64, sourceID string) (int, error) {
	var res meilisearch.DocumentsResult
	err := m.index.GetDocumentsWithContext(ctx, &meilisearch.DocumentsQuery{
		Limit: 1, Fields: []string{"id"}, Filter: sourceFilter(orgID, sourceID)}, &res)
	if err != nil {
		return 0, wrap("count documents", err)
	}
	return int(res.Total), nil
}

// Health checks that Meilisearch answers and that the key may read the
// index (its stats).
func (m *Meili) Health(ctx context.Context) error {
	if _, err := m.index.GetStatsWithContext(ctx, nil); err != nil {
		return wrap("index stats", err)
	}
	return nil
}

// Search runs a query, always confined to the organization and to what the
// workspace sees (its own sources and the organization's), enabled tools
// only unless q.IncludeDisabled.
func (m *Meili) Search(ctx context.Context, q Query) (Results, error) {
	res, _, err := m.search(ctx, q)
	return res, err
}

// SearchTimed is Search that also returns Meilisearch's own processing time.
func (m *Meili) SearchTimed(ctx context.Context, q Query) (Results, time.Duration, error) {
	return m.search(ctx, q)
}

func (m *Meili) search(ctx context.Context, q Query) (Results, time.Duration, error) {
	req := &meilisearch.SearchRequest{
		Query:  queryText(q.Text),
		Filter: queryFilter(q),
		Limit:  int64(clampLimit(q.Limit)),
		Offset: int64(max(q.Offset, 0)),
		AttributesToRetrieve: []string{"path", "description", "source_id", "source_name", "type",
			"default_approval", "enabled"},
		ShowRankingScore: true,
		// When too few documents hold every word, drop the most frequent
		// words first: in "list the workflow runs", "list" says least.
		// (Measured on the labelled set: frequency 0.95, last 0.91.)
		MatchingStrategy: meilisearch.Frequency,
	}
	if req.Query == "" {
		req.Sort = []string{"path:asc"}
	}
	raw, err := m.index.SearchRawWithContext(ctx, req.Query, req)
	if err != nil {
		return Results{}, 0, wrap("search", err)
	}
	var resp struct {
		Hits []struct {
			Hit
			RankingScore float64 `json:"_rankingScore"`
		} `json:"hits"`
		EstimatedTotalHits int `json:"estimatedTotalHits"`
		ProcessingTimeMs   int `json:"processingTimeMs"`
	}
	if err := json.Unmarshal(*raw, &resp); err != nil {
		return Results{}, 0, fmt.Errorf("meilisearch search: decode: %w", err)
	}
	out := Results{Hits: make([]Hit, len(resp.Hits)), Total: resp.EstimatedTotalHits}
	for i, h := range resp.Hits {
		out.Hits[i] = h.Hit
		out.Hits[i].Score = h.RankingScore
	}
	return out, time.Duration(resp.ProcessingTimeMs) * time.Millisecond, nil
}

// queryText drops stop words from the text before it is sent: Meilisearch
// treats the last word as a prefix and keeps it even when it is a stop
// word, so "read several files at once" would require documents to contain
// "once". Text made only of stop words is sent as it is.
func queryText(text string) string {
	words := strings.Fields(text)
	kept := words[:0:0]
	for _, w := range words {
		if !db.IsStopWord(strings.Trim(w, ".,;:!?\"'()")) {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		return strings.Join(words, " ")
	}
	return strings.Join(kept, " ")
}

func clampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// queryFilter is the filter of every search: the organization, the
// workspace's sources or the organization's, enabled ones unless asked,
// then the optional filters.
func queryFilter(q Query) string {
	parts := []string{
		"org_id = " + strconv.FormatInt(q.OrgID, 10),
		"(workspace_id = " + strconv.FormatInt(q.WorkspaceID, 10) + ` OR scope = "organization")`,
	}
	if !q.IncludeDisabled {
		parts = append(parts, "enabled = true")
	}
	if q.SourceID != "" {
		parts = append(parts, "source_id = "+quote(q.SourceID))
	}
	if q.Type != "" {
		parts = append(parts, "type = "+quote(q.Type))
	}
	if q.Approval != "" {
		parts = append(parts, "default_approval = "+quote(q.Approval))
	}
	return strings.Join(parts, " AND ")
}

func sourceFilter(orgID int64, sourceID string) string {
	f := "org_id = " + strconv.FormatInt(orgID, 10)
	if sourceID != "" {
		f += " AND source_id = " + quote(sourceID)
	}
	return f
}

// quote makes a Meilisearch filter string literal of s.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// wait waits for a task and turns its failure into an error carrying
// Meilisearch's message.
func (m *Meili) wait(ctx context.Context, op string, info *meilisearch.TaskInfo) error {
	task, err := m.client.WaitForTaskWithContext(ctx, info.TaskUID, taskPoll)
	if err != nil {
		return wrap(op+": wait for task", err)
	}
	if task.Status != meilisearch.TaskStatusSucceeded {
		return &TaskError{Op: op, TaskUID: task.UID, Status: string(task.Status), Code: task.Error.Code, Message: task.Error.Message}
	}
	return nil
}

// TaskError is a Meilisearch task that failed or was canceled.
type TaskError struct {
	Op      string
	TaskUID int64
	Status  string
	Code    string
	Message string
}

func (e *TaskError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("meilisearch %s: task %d %s", e.Op, e.TaskUID, e.Status)
	}
	return fmt.Sprintf("meilisearch %s: task %d %s: %s (%s)", e.Op, e.TaskUID, e.Status, e.Message, e.Code)
}

// isCode reports whether err is a Meilisearch error with the given code.
func isCode(err error, code string) bool {
	var me *meilisearch.Error
	if errors.As(err, &me) {
		return me.MeilisearchApiError.Code == code
	}
	var te *TaskError
	return errors.As(err, &te) && te.Code == code
}

// wrap turns a client error into a short one: Meilisearch's own message
// for an API error, the cause for a transport error, and ErrUnavailable in
// the chain when the server rather than the request is at fault.
func wrap(op string, err error) error {
	var me *meilisearch.Error
	if !errors.As(err, &me) {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("meilisearch %s: %w: %w", op, ErrUnavailable, err)
		}
		return fmt.Errorf("meilisearch %s: %w", op, err)
	}
	switch {
	case me.ErrCode == meilisearch.MeilisearchCommunicationError || me.ErrCode == meilisearch.MeilisearchTimeoutError ||
		me.ErrCode == meilisearch.MeilisearchMaxRetriesExceeded:
		cause := me.OriginError
		if cause == nil {
			cause = errors.New("no response")
		}
		return fmt.Errorf("meilisearch %s: %w: %w", op, ErrUnavailable, cause)
	case me.StatusCode >= 500, me.StatusCode == http.StatusUnauthorized, me.StatusCode == http.StatusForbidden,
		me.MeilisearchApiError.Code == "index_not_found":
		return fmt.Errorf("meilisearch %s: %w: %d %s (%s)", op, ErrUnavailable, me.StatusCode, apiMessage(me), me.MeilisearchApiError.Code)
	}
	return &apiError{op: op, status: me.StatusCode, msg: apiMessage(me), err: me}
}

// apiError is a request Meilisearch refused (4xx); it keeps the client's
// error in the chain for isCode.
type apiError struct {
	op     string
	status int
	msg    string
	err    *meilisearch.Error
}

func (e *apiError) Error() string {
	return fmt.Sprintf("meilisearch %s: %d %s (%s)", e.op, e.status, e.msg, e.err.MeilisearchApiError.Code)
}

func (e *apiError) Unwrap() error { return e.err }

func apiMessage(me *meilisearch.Error) string {
	if me.MeilisearchApiError.Message != "" {
		return me.MeilisearchApiError.Message
	}
	return http.StatusText(me.StatusCode)
}
