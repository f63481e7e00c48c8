package search

import (
	"encoding/json"
	"sort"

	"github.com/toolgate/toolgate/db"
)

// DocsFor builds the index documents of a source's tools, one per tool in
// the same order. Params come from the tools' params column or, where it is
// empty, from the top-level properties of the input schema.
func DocsFor(src db.Source, tools []db.SourceTool) []Doc {
	var workspaceID int64
	if src.WorkspaceID != nil {
		workspaceID = *src.WorkspaceID
	}
	docs := make([]Doc, len(tools))
	for i, t := range tools {
		aliases := []string(t.Aliases)
		if aliases == nil {
			aliases = []string{}
		}
		params := []string(t.Params)
		if len(params) == 0 {
			params = schemaParams(t.InputSchema)
		}
		docs[i] = Doc{
			ID:              DocID(src.ID, t.Path),
			OrgID:           src.OrgID,
			WorkspaceID:     workspaceID,
			Scope:           src.Scope,
			SourceID:        src.ID,
			SourceName:      src.Name,
			Type:            src.Type,
			Path:            t.Path,
			Name:            t.Name,
			Aliases:         aliases,
			Description:     t.Description,
			Params:          params,
			DefaultApproval: t.DefaultApproval,
			Enabled:         src.Enabled,
		}
	}
	return docs
}

// schemaParams lists the top-level property names of a JSON Schema, sorted;
// never nil.
func schemaParams(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	names := []string{}
	if json.Unmarshal(schema, &s) != nil {
		return names
	}
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// SearchText is [db.SearchText]: the words of a tool's path, name, aliases
// and parameter names that the PostgreSQL fallback searches.
func SearchText(path, name string, aliases, params []string) string {
	return db.SearchText(path, name, aliases, params)
}
