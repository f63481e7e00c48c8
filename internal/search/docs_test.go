package search_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/search"
)

func TestSearchText(t *testing.T) {
	cases := []struct {
		path, name      string
		aliases, params []string
		want            string
	}{
		{"github.repos.list_for_org", "repos.list_for_org",
			[]string{"github.repos.listForOrg", "githubreposlistfororg"}, []string{"org", "per_page", "type"},
			"github repos list for org githubreposlistfororg per page type"},
		{"everything.get-tiny-image", "get-tiny-image", nil, nil, "everything get tiny image"},
		{"api.getHTTPResponse", "getHTTPResponse", nil, []string{"oauth2Token", "v2"}, "api get http response oauth2 token v2"},
		{"", "", nil, nil, ""},
	}
	for _, c := range cases {
		if got := search.SearchText(c.path, c.name, c.aliases, c.params); got != c.want {
			t.Errorf("SearchText(%q, %q, %q, %q) = %q, want %q", c.path, c.name, c.aliases, c.params, got, c.want)
		}
	}
}

func TestDocsFor(t *testing.T) {
	ws := int64(7)
	src := db.Source{ID: "src_1", OrgID: 3, WorkspaceID: &ws, Scope: "workspace", Name: "Files", Type: "mcp", Enabled: false}
	tools := []db.SourceTool{
		{Path: "files.read", Name: "read", Aliases: db.Strings{"filesread"}, Description: "Read a file",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{},"encoding":{}}}`), DefaultApproval: "auto"},
		{Path: "files.write", Name: "write", Params: db.Strings{"content", "path"},
			InputSchema: json.RawMessage(`{"type":"object"}`), DefaultApproval: "required"},
	}
	want := []search.Doc{
		{ID: search.DocID("src_1", "files.read"), OrgID: 3, WorkspaceID: 7, Scope: "workspace", SourceID: "src_1",
			SourceName: "Files", Type: "mcp", Path: "files.read", Name: "read", Aliases: []string{"filesread"},
			Description: "Read a file", Params: []string{"encoding", "path"}, DefaultApproval: "auto", Enabled: false},
		{ID: search.DocID("src_1", "files.write"), OrgID: 3, WorkspaceID: 7, Scope: "workspace", SourceID: "src_1",
			SourceName: "Files", Type: "mcp", Path: "files.write", Name: "write", Aliases: []string{},
			Params: []string{"content", "path"}, DefaultApproval: "required", Enabled: false},
	}
	if diff := cmp.Diff(want, search.DocsFor(src, tools)); diff != "" {
		t.Errorf("DocsFor (-want +got):\n%s", diff)
	}
	org := src
	org.WorkspaceID, org.Scope = nil, "organization"
	if got := search.DocsFor(org, tools[:1])[0]; got.WorkspaceID != 0 || got.Scope != "organization" {
		t.Errorf("organization source: workspace %d, scope %s", got.WorkspaceID, got.Scope)
	}
}
