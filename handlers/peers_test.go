package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testenv"
)

// TestGitHubRESTThroughTheAPI registers GitHub's REST description by URL and
// checks that all 1,223 operations became tools, listed and paged.
func TestGitHubRESTThroughTheAPI(t *testing.T) {
	f := newFixture(t, peerVars)
	owner := tokenClient(t, f.env, "owner@acme.test")
	spec := testenv.GitHubSpec(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, spec) }))
	defer srv.Close()
	src := createSource(t, owner, "/api/v1/orgs/acme/sources", map[string]any{"name": "GitHub", "type": "openapi",
		"config": map[string]any{"spec": srv.URL + "/api.github.com.json"}}, 201)
	if src.State != "ready" || src.ToolCount != 1223 || src.Scope != "organization" {
		t.Fatalf("github: %+v", src)
	}
	var page struct {
		Data  []struct{ Path string }
		Total int
	}
	owner.api("GET", "/api/v1/orgs/acme/sources/"+src.ID+"/tools?limit=500&offset=1000", nil).json(t, &page)
	if page.Total != 1223 || len(page.Data) != 223 {
		t.Fatalf("last page: total %d, %d tools", page.Total, len(page.Data))
	}
	detail := f.member.get("/o/acme/w/default/sources/" + src.ID + "?page=25")
	if detail.status != 200 || !strings.Contains(detail.body, "Page 25 of 25") {
		t.Fatalf("console paging: %d", detail.status)
	}
	if res := f.member.get("/o/acme/w/default/sources/" + src.ID); !strings.Contains(res.body, "github.actions.add_custom_labels_to_self_hosted_runner_for_org") {
		t.Fatal("the first page lacks the first tool")
	}
}

// TestGraphQLEndpointThroughTheAPI introspects a live graphql-yoga endpoint,
// and explains an endpoint that refuses introspection.
func TestGraphQLEndpointThroughTheAPI(t *testing.T) {
	f := newFixture(t, peerVars)
	owner := tokenClient(t, f.env, "owner@acme.test")
	open := testenv.StartYoga(t)
	src := createSource(t, owner, wsSources, map[string]any{"name": "Library", "type": "graphql", "config": map[string]any{"endpoint": open + "/graphql"}}, 201)
	if src.State != "ready" || src.ToolCount != 5 {
		t.Fatalf("library: %+v", src)
	}
	closed := testenv.StartYoga(t, "--no-introspection")
	shut := createSource(t, owner, wsSources, map[string]any{"name": "Closed", "type": "graphql", "config": map[string]any{"endpoint": closed + "/graphql"}}, 201)
	if shut.State != "failed" || !strings.Contains(shut.Error, "introspection") {
		t.Fatalf("closed: %+v", shut)
	}
}
