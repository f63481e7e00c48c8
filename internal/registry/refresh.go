package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/sources"
)

// Refresher discovers sources, stores their tools as generations and keeps
// the search index level with PostgreSQL.
type Refresher struct {
	Store      *db.Store
	Discoverer *Discoverer
	Rules      sources.Rules
	Log        *slog.Logger
	// Index is the Meilisearch index; nil leaves searching to PostgreSQL.
	Index *search.Meili
	// Credentials authenticate discovery; nil discovers without.
	Credentials Discovery
}

// Discovery gives a source's discovery its credential.
type Discovery interface {
	ForDiscovery(ctx context.Context, src db.Source) (*sources.Auth, error)
}

// Refresh discovers one source and stores what it found. A failed
// discovery is recorded on the source (state failed, with the error) and
// keeps the last good tools; the returned error is only for failures to
// read or write PostgreSQL, which the worker retries. A disabled source is
// not discovered: its stored tools are rewritten as hidden. The worker's
// refresh job runs exactly this function.
func (r *Refresher) Refresh(ctx context.Context, orgID int64, id string) error {
	src, err := r.Store.Source(ctx, orgID, id)
	if err != nil {
		return fmt.Errorf("load source %s: %w", id, err)
	}
	// A refresh asked for while this one runs makes the worker run it
	// again; until then the states written here stay queued.
	answering := &db.Answering{RequestedAt: src.RefreshRequestedAt}
	if err := r.Store.MarkLoading(ctx, orgID, id, answering); err != nil {
		return fmt.Errorf("mark source %s loading: %w", id, err)
	}
	start := time.Now()
	var result db.DiscoveryResult
	var notModified bool
	var derr error
	if src.Enabled {
		result, notModified, derr = r.discover(ctx, src)
	} else {
		result, derr = r.stored(ctx, src)
	}
	ms := int(time.Since(start).Milliseconds())
	switch {
	case derr != nil:
		r.Log.Info("source discovery failed", "source", id, "type", src.Type, "error", derr.Error())
		if err := r.Store.RecordFailure(context.WithoutCancel(ctx), orgID, id, derr.Error(), ms, answering); err != nil {
			return fmt.Errorf("record failure of source %s: %w", id, err)
		}
		return nil
	case notModified:
		if err := r.Store.MarkUnchanged(ctx, orgID, id, answering); err != nil {
			return err
		}
		return r.IndexIfBehind(ctx, orgID, id)
	}
	result.DiscoveryMS = ms
	result.Answering = answering
	result.Signature = Signature(src, result.SpecHash)
	docs := search.DocsFor(src, result.Tools)
	for i := range result.Tools {
		result.Tools[i].DocHash = docs[i].Hash()
	}
	written, err := r.Store.SaveDiscovery(ctx, orgID, id, result)
	if err != nil {
		return fmt.Errorf("save tools of source %s: %w", id, err)
	}
	if written.Unchanged {
		return r.IndexIfBehind(ctx, orgID, id)
	}
	r.Log.Info("source discovered", "source", id, "type", src.Type, "tools", len(result.Tools), "generation", written.Generation, "duration_ms", ms)
	// The index holds the generation this one replaced only when that was
	// indexed and nothing else was written since the source was loaded;
	// otherwise (Meilisearch was down, say) a difference would leave out
	// every tool that did not change.
	byDifference := src.IndexedGeneration == src.Generation && written.Generation == src.Generation+1
	return r.index(ctx, src, written, docs, byDifference)
}

// Signature summarizes what a source's tool set depends on: an unchanged
// signature means a refresh has nothing to write.
func Signature(src db.Source, specHash string) string {
	return sources.Hash([]byte(strings.Join([]string{specHash, src.AuthFingerprint, strconv.Itoa(src.ConfigVersion),
		strconv.FormatBool(src.Enabled), src.UpdatedAt.UTC().Format(time.RFC3339Nano), src.Name, src.Slug}, "\x00")))
}

// index brings Meilisearch to the written generation: by difference (only
// added and changed documents are sent, removed ones deleted) when the
// index holds the previous generation, else by replacing all of the
// source's documents.
func (r *Refresher) index(ctx context.Context, src db.Source, w db.Written, docs []search.Doc, byDifference bool) error {
	if r.Index == nil {
		return r.Store.MarkIndexed(ctx, src.ID, w.Generation)
	}
	var upserts []search.Doc
	var deletes []string
	if byDifference {
		current := make(map[string]bool, len(docs))
		for _, d := range docs {
			current[d.Path] = true
			if w.Previous[d.Path] != d.Hash() {
				upserts = append(upserts, d)
			}
		}
		for path := range w.Previous {
			if !current[path] {
				deletes = append(deletes, search.DocID(src.ID, path))
			}
		}
	} else {
		upserts = docs
	}
	err := r.Index.Upsert(ctx, upserts)
	if err == nil && !byDifference {
		deletes, err = r.stale(ctx, src, docs)
	}
	if err == nil && len(deletes) > 0 {
		err = r.Index.Delete(ctx, deletes)
	}
	if err != nil {
		r.Log.Warn("search index update failed; the reconcile will retry", "source", src.ID, "error", err.Error())
		return r.Store.MarkIndexFailed(context.WithoutCancel(ctx), src.ID, w.Generation, err.Error())
	}
	r.Log.Info("source indexed", "source", src.ID, "upserted", len(upserts), "deleted", len(deletes), "generation", w.Generation,
		"by_difference", byDifference)
	if err := r.Store.MarkIndexed(ctx, src.ID, w.Generation); err != nil {
		return err
	}
	next, err := r.overtaken(ctx, src.OrgID, src.ID, w.Generation)
	if err != nil || next == nil {
		return err
	}
	return r.Reindex(ctx, *next)
}

// overtaken checks a source after its documents of generation gen were
// written. Writes of a source deleted meanwhile are removed again (its
// unindex may have run before them). A source with a newer generation is
// returned to be indexed again: that generation's own indexing may have
// run before these writes, which then left older documents over newer
// ones. nil means the index holds gen and gen is current.
func (r *Refresher) overtaken(ctx context.Context, orgID int64, id string, gen int64) (*db.Source, error) {
	cur, err := r.Store.Source(ctx, orgID, id)
	if errors.Is(err, db.ErrNotFound) {
		if err := r.Index.DeleteWhere(ctx, orgID, id); err != nil {
			return nil, fmt.Errorf("remove documents of deleted source %s: %w", id, err)
		}
		return nil, nil
	}
	if err != nil || cur.Generation == gen {
		return nil, err
	}
	return &cur, nil
}

// stale lists the ids of documents the index holds for a source besides docs.
func (r *Refresher) stale(ctx context.Context, src db.Source, docs []search.Doc) ([]string, error) {
	held, err := r.Index.IDs(ctx, src.OrgID, src.ID)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		delete(held, d.ID)
	}
	out := make([]string, 0, len(held))
	for id := range held {
		out = append(out, id)
	}
	return out, nil
}

// IndexIfBehind reindexes a source whose index lags behind its generation.
func (r *Refresher) IndexIfBehind(ctx context.Context, orgID int64, id string) error {
	src, err := r.Store.Source(ctx, orgID, id)
	if err != nil || src.IndexedGeneration == src.Generation {
		return err
	}
	return r.Reindex(ctx, src)
}

// Reindex brings a source's documents in Meilisearch to its current
// generation from PostgreSQL, which is the truth: the current documents are
// added first, then any other document of the source is removed, so
// searches never find the source empty meanwhile. When a newer generation
// was written while it ran, it indexes that one too.
func (r *Refresher) Reindex(ctx context.Context, src db.Source) error {
	for {
		tools, err := r.Store.AllTools(ctx, src.OrgID, src.ID)
		if err != nil {
			return err
		}
		if r.Index == nil {
			return r.Store.MarkIndexed(ctx, src.ID, src.Generation)
		}
		docs := search.DocsFor(src, tools)
		err = r.Index.Upsert(ctx, docs)
		var stale []string
		if err == nil {
			stale, err = r.stale(ctx, src, docs)
		}
		if err == nil && len(stale) > 0 {
			err = r.Index.Delete(ctx, stale)
		}
		if err != nil {
			return r.Store.MarkIndexFailed(context.WithoutCancel(ctx), src.ID, src.Generation, err.Error())
		}
		if err := r.Store.MarkIndexed(ctx, src.ID, src.Generation); err != nil {
			return err
		}
		next, err := r.overtaken(ctx, src.OrgID, src.ID, src.Generation)
		if err != nil || next == nil {
			return err
		}
		src = *next
	}
}

// Delete removes a source and, at once, its documents from Meilisearch;
// the worker's queue does the same through a job that survives restarts.
func (r *Refresher) Delete(ctx context.Context, orgID int64, sourceID string, actorID int64) error {
	if err := r.Store.DeleteSource(ctx, orgID, sourceID, actorID); err != nil {
		return err
	}
	return r.Unindex(ctx, orgID, sourceID)
}

// Unindex removes a deleted source's documents from Meilisearch.
func (r *Refresher) Unindex(ctx context.Context, orgID int64, sourceID string) error {
	if r.Index == nil {
		return nil
	}
	return r.Index.DeleteWhere(ctx, orgID, sourceID)
}

// stored rebuilds the result from the tools already stored, for a source
// that is not discovered (disabled): the tool set stays, its documents and,
// after a rename, its paths change.
func (r *Refresher) stored(ctx context.Context, src db.Source) (db.DiscoveryResult, error) {
	tools, err := r.Store.AllTools(ctx, src.OrgID, src.ID)
	if err != nil {
		return db.DiscoveryResult{}, err
	}
	disc := &sources.Discovery{SpecHash: src.SpecHash, ETag: src.ETag, BaseURL: src.BaseURL, Server: src.Server}
	_ = json.Unmarshal(src.Warnings, &disc.Warnings)
	if db.Present(src.AuthProfile) {
		disc.AuthProfile = &sources.AuthProfile{}
		_ = json.Unmarshal(src.AuthProfile, disc.AuthProfile)
	}
	for _, t := range tools {
		tool := sources.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
			DefaultApproval: sources.Approval(t.DefaultApproval), Ref: t.Ref}
		if db.Present(t.OutputSchema) {
			tool.OutputSchema = t.OutputSchema
		}
		_ = json.Unmarshal(t.Annotations, &tool.Annotations)
		disc.Tools = append(disc.Tools, tool)
	}
	result, _, err := Stored(src.Slug, disc)
	return result, err
}

func (r *Refresher) discover(ctx context.Context, src db.Source) (result db.DiscoveryResult, notModified bool, err error) {
	cfg, problems := sources.ParseConfig(sources.Type(src.Type), src.Config, r.Rules)
	if len(problems) > 0 {
		return db.DiscoveryResult{}, false, fmt.Errorf("the configuration is no longer valid: %w", problems)
	}
	var auth *sources.Auth
	if r.Credentials != nil {
		if auth, err = r.Credentials.ForDiscovery(ctx, src); err != nil {
			return db.DiscoveryResult{}, false, err
		}
	}
	disc, notModified, err := r.Discoverer.Discover(ctx, cfg, src.ETag, auth)
	if err != nil || notModified {
		return db.DiscoveryResult{}, notModified, auth.RedactError(err)
	}
	return Stored(src.Slug, disc)
}

// Stored converts a discovery into the rows SaveDiscovery writes, with tool
// paths assigned under the source's namespace.
func Stored(namespace string, disc *sources.Discovery) (db.DiscoveryResult, bool, error) {
	if disc == nil {
		return db.DiscoveryResult{}, false, errors.New("discovery returned nothing")
	}
	tools := sources.AssignPaths(namespace, disc.Tools)
	out := db.DiscoveryResult{SpecHash: disc.SpecHash, ETag: disc.ETag, BaseURL: disc.BaseURL, Server: disc.Server,
		Tools: make([]db.SourceTool, len(tools))}
	warnings := disc.Warnings
	if warnings == nil {
		warnings = []sources.Warning{}
	}
	out.Warnings, _ = json.Marshal(warnings)
	if disc.AuthProfile != nil {
		out.AuthProfile, _ = json.Marshal(disc.AuthProfile)
	}
	out.Quality, _ = json.Marshal(sources.Measure(tools))
	for i, t := range tools {
		ann, _ := json.Marshal(t.Annotations)
		in := t.InputSchema
		if len(in) == 0 {
			in = json.RawMessage(`{"type":"object"}`)
		}
		ref := t.Ref
		if len(ref) == 0 {
			ref = json.RawMessage(`{}`)
		}
		approval := t.DefaultApproval
		if approval == "" {
			approval = sources.ApprovalRequired
		}
		out.Tools[i] = db.SourceTool{Path: t.Path, Name: t.Name, Aliases: t.Aliases, Title: t.Title, Description: t.Description,
			InputSchema: in, OutputSchema: t.OutputSchema, Annotations: ann, DefaultApproval: string(approval), Ref: ref,
			Params: paramNames(in)}
	}
	return out, false, nil
}

// paramNames lists the top-level argument names of an input schema, for search.
func paramNames(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
