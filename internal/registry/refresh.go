package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/sources"
)

// Refresher discovers sources and stores their tools.
type Refresher struct {
	Store      *db.Store
	Discoverer *Discoverer
	Rules      sources.Rules
	Log        *slog.Logger
}

// Refresh discovers one source and stores what it found. A failed
// discovery is recorded on the source (state failed, with the error) and
// keeps the last good tools; the returned error is only for failures to
// read or write the store. Part 3's worker schedules exactly this function.
func (r *Refresher) Refresh(ctx context.Context, orgID int64, id string) error {
	src, err := r.Store.Source(ctx, orgID, id)
	if err != nil {
		return fmt.Errorf("load source %s: %w", id, err)
	}
	if err := r.Store.MarkSource(ctx, orgID, id, "loading"); err != nil {
		return fmt.Errorf("mark source %s loading: %w", id, err)
	}
	start := time.Now()
	result, notModified, derr := r.discover(ctx, src)
	ms := int(time.Since(start).Milliseconds())
	switch {
	case derr != nil:
		r.Log.Info("source discovery failed", "source", id, "type", src.Type, "error", derr.Error())
		if err := r.Store.RecordFailure(context.WithoutCancel(ctx), orgID, id, derr.Error(), ms); err != nil {
			return fmt.Errorf("record failure of source %s: %w", id, err)
		}
		return nil
	case notModified:
		return r.Store.MarkUnchanged(ctx, orgID, id)
	}
	result.DiscoveryMS = ms
	if err := r.Store.SaveDiscovery(ctx, orgID, id, result); err != nil {
		return fmt.Errorf("save tools of source %s: %w", id, err)
	}
	r.Log.Info("source discovered", "source", id, "type", src.Type, "tools", len(result.Tools), "duration_ms", ms)
	return nil
}

func (r *Refresher) discover(ctx context.Context, src db.Source) (db.DiscoveryResult, bool, error) {
	cfg, problems := sources.ParseConfig(sources.Type(src.Type), src.Config, r.Rules)
	if len(problems) > 0 {
		return db.DiscoveryResult{}, false, fmt.Errorf("the configuration is no longer valid: %w", problems)
	}
	disc, notModified, err := r.Discoverer.Discover(ctx, cfg, src.ETag)
	if err != nil || notModified {
		return db.DiscoveryResult{}, notModified, err
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
			InputSchema: in, OutputSchema: t.OutputSchema, Annotations: ann, DefaultApproval: string(approval), Ref: ref}
	}
	return out, false, nil
}
