package openapi

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

// readPeer reads a file of the npm test peers.
func readPeer(t testing.TB, rel string) []byte {
	t.Helper()
	doc, err := os.ReadFile(testenv.PeerPath(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestPetstores(t *testing.T) {
	apiKey := &sources.AuthProfile{Type: "apiKey", In: "header", Name: "api_key"}
	tests := []struct {
		file    string
		tools   int
		baseURL string
		auth    *sources.AuthProfile
	}{
		{"2.0/json/petstore.json", 20, "http://petstore.swagger.io/v2", apiKey},
		{"2.0/yaml/petstore.yaml", 20, "http://petstore.swagger.io/v2", apiKey},
		{"3.0/json/petstore.json", 20, "http://petstore.swagger.io/v2", apiKey},
		{"3.0/yaml/petstore.yaml", 20, "http://petstore.swagger.io/v2", apiKey},
		{"3.1/json/petstore.json", 20, "http://petstore.swagger.io/v2", apiKey},
		{"3.1/yaml/petstore.yaml", 20, "http://petstore.swagger.io/v2", apiKey},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			doc := readPeer(t, "@readme/oas-examples/"+tt.file)
			disc, err := Build(doc, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(disc.Tools) != tt.tools || disc.BaseURL != tt.baseURL || len(disc.Warnings) != 0 {
				t.Errorf("%d tools, base URL %q, warnings %v", len(disc.Tools), disc.BaseURL, disc.Warnings)
			}
			if diff := cmp.Diff(tt.auth, disc.AuthProfile); diff != "" {
				t.Errorf("auth profile (-want +got):\n%s", diff)
			}
			tools := byName(t, disc.Tools)
			find := tools["pet.find_pets_by_status"]
			diffJSON(t, "pet.find_pets_by_status ref", find.Ref, `{"operation_id": "findPetsByStatus", "method": "GET", "path": "/pet/findByStatus",
				"params": [{"name": "status", "in": "query", "style": "form", "explode": true, "required": true, "property": "status"}]}`)
			if find.DefaultApproval != sources.ApprovalAuto || find.Description != "Finds Pets by status\n\nMultiple status values can be provided with comma separated strings" {
				t.Errorf("pet.find_pets_by_status: %q, %q", find.DefaultApproval, find.Description)
			}
			add := tools["pet.add_pet"]
			var in struct {
				Required   []string                  `json:"required"`
				Properties map[string]map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(add.InputSchema, &in); err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(in.Required, []string{"body"}) || in.Properties["body"]["required"] == nil || add.DefaultApproval != sources.ApprovalRequired {
				t.Errorf("pet.add_pet input %s", add.InputSchema)
			}
			if del := tools["pet.delete_pet"]; !strings.Contains(string(del.Ref), `"method":"DELETE"`) || !*del.Annotations.DestructiveHint {
				t.Errorf("pet.delete_pet: %s %+v", del.Ref, del.Annotations)
			}
			if out := tools["pet.get_pet_by_id"].OutputSchema; !strings.Contains(string(out), `"photoUrls"`) {
				t.Errorf("pet.get_pet_by_id output %s", out)
			}
			checkTools(t, disc.Tools)
		})
	}
}

// TestPetstoreJSONAndYAMLAgree builds each petstore from JSON and from YAML:
// everything but the spec hash must match.
func TestPetstoreJSONAndYAMLAgree(t *testing.T) {
	for _, version := range []string{"2.0", "3.0", "3.1"} {
		j, err := Build(readPeer(t, "@readme/oas-examples/"+version+"/json/petstore.json"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		y, err := Build(readPeer(t, "@readme/oas-examples/"+version+"/yaml/petstore.yaml"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		j.SpecHash, y.SpecHash = "", ""
		if diff := cmp.Diff(normalized(t, j), normalized(t, y)); diff != "" {
			t.Errorf("%s: JSON and YAML differ (-json +yaml):\n%s", version, diff)
		}
	}
}

// normalized turns a discovery's JSON fields into values, so that two
// equal schemas compare equal whatever their spelling.
func normalized(t *testing.T, d *sources.Discovery) any {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return asAny(t, raw)
}

// rawAsText compares JSON documents as text, which is much quicker than
// byte by byte.
var rawAsText = cmp.Transformer("text", func(r json.RawMessage) string { return string(r) })

// expectedFailures are the examples that are not usable as tools, each
// with the error a person sees. Both describe no operations at all.
var expectedFailures = map[string]string{
	// An example of the info object's title alone: its paths are empty.
	"3.0/json/openapi-workshop/title.json": "the document has no operations",
	// Webhooks only (OpenAPI 3.1's webhooks are calls the API makes, not tools).
	"3.1/json/webhooks.json": "the document has no operations: it describes only webhooks, which are not tools",
	"3.1/yaml/webhooks.yaml": "the document has no operations: it describes only webhooks, which are not tools",
}

// TestEveryExample builds every document of @readme/oas-examples (Swagger
// 2.0, OpenAPI 3.0 and 3.1, JSON and YAML): each builds into valid,
// deterministic tools, or fails with the message listed for it.
func TestEveryExample(t *testing.T) {
	root := filepath.Dir(testenv.PeerPath(t, "@readme/oas-examples/package.json"))
	var files []string
	for _, version := range []string{"2.0", "3.0", "3.1"} {
		err := filepath.WalkDir(filepath.Join(root, version), func(path string, d fs.DirEntry, err error) error {
			ext := filepath.Ext(path)
			if err == nil && !d.IsDir() && (ext == ".json" || ext == ".yaml" || ext == ".yml") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 129 {
		t.Fatalf("found only %d examples under %s", len(files), root)
	}
	counts := map[string]int{}
	for _, path := range files {
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		t.Run(rel, func(t *testing.T) {
			doc, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first, err := Build(doc, Options{})
			if want, expected := expectedFailures[rel]; expected || err != nil {
				if err == nil || err.Error() != want {
					t.Fatalf("error %v, want %q", err, want)
				}
				return
			}
			second, err := Build(doc, Options{})
			if err != nil {
				t.Fatal(err)
			}
			a, b := checkTools(t, first.Tools), sources.AssignPaths("petstore", second.Tools)
			if diff := cmp.Diff(first, second, rawAsText); diff != "" {
				t.Fatalf("two builds differ (-first +second):\n%s", diff)
			}
			if diff := cmp.Diff(a, b, rawAsText); diff != "" {
				t.Fatalf("two path assignments differ (-first +second):\n%s", diff)
			}
			counts[strings.SplitN(rel, "/", 2)[0]] += len(a)
		})
	}
	t.Logf("%d documents; tools per version: %v", len(files), counts)
}

func TestGitHub(t *testing.T) {
	doc, err := os.ReadFile(testenv.GitHubSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	disc, err := Build(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(disc.Tools) != 1223 || len(disc.Warnings) != 0 {
		t.Fatalf("%d tools (want all 1,223 operations), warnings %v", len(disc.Tools), disc.Warnings)
	}
	if disc.BaseURL != "https://api.github.com" || disc.SpecHash != sources.Hash(doc) {
		t.Errorf("base URL %q, spec hash %q", disc.BaseURL, disc.SpecHash)
	}
	// GitHub's description declares no securitySchemes (its docs say to
	// send a token), so nothing can be inferred.
	if disc.AuthProfile != nil {
		t.Errorf("auth profile %+v, want none", disc.AuthProfile)
	}
	tools := byName(t, disc.Tools)
	for name, opID := range map[string]string{
		"repos.get":    "repos/get",
		"pulls.create": "pulls/create",
		"activity.star_repo_for_authenticated_user":  "activity/star-repo-for-authenticated-user",
		"issues.list_for_repo":                       "issues/list-for-repo",
		"repos.delete":                               "repos/delete",
		"orgs.api_insights_get_route_stats_by_actor": "api-insights/get-route-stats-by-actor",
	} {
		var ref Ref
		if err := json.Unmarshal(tools[name].Ref, &ref); err != nil || ref.OperationID != opID {
			t.Errorf("%s: ref %s, want operationId %q", name, tools[name].Ref, opID)
		}
	}
	var get struct {
		Required   []string       `json:"required"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(tools["repos.get"].InputSchema, &get); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(get.Required, []string{"owner", "repo"}) || len(get.Properties) != 2 {
		t.Errorf("repos.get input %s", tools["repos.get"].InputSchema)
	}
	if out := tools["repos.get"].OutputSchema; !strings.Contains(string(out), `"full_name"`) {
		t.Errorf("repos.get has no repository output schema")
	}
	var create struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(tools["pulls.create"].InputSchema, &create); err != nil {
		t.Fatal(err)
	}
	if body := create.Properties["body"]; body == nil || body["type"] != "object" || !cmp.Equal(create.Required, []string{"owner", "repo", "body"}) {
		t.Errorf("pulls.create input %s", tools["pulls.create"].InputSchema)
	}
	// Release assets go to uploads.github.com, as raw bytes.
	upload := tools["repos.upload_release_asset"]
	diffJSON(t, "repos.upload_release_asset ref", upload.Ref, `{"operation_id": "repos/upload-release-asset", "method": "POST",
		"path": "/repos/{owner}/{repo}/releases/{release_id}/assets", "base_url": "https://uploads.github.com", "params": [
			{"name": "owner", "in": "path", "style": "simple", "explode": false, "required": true, "property": "owner"},
			{"name": "repo", "in": "path", "style": "simple", "explode": false, "required": true, "property": "repo"},
			{"name": "release_id", "in": "path", "style": "simple", "explode": false, "required": true, "property": "release_id"},
			{"name": "name", "in": "query", "style": "form", "explode": true, "required": true, "property": "name"},
			{"name": "label", "in": "query", "style": "form", "explode": true, "required": false, "property": "label"}
		], "body": {"content_types": ["application/octet-stream"], "required": false, "binary": true}}`)
	star := tools["activity.star_repo_for_authenticated_user"]
	if star.DefaultApproval != sources.ApprovalRequired || !*star.Annotations.IdempotentHint || *star.Annotations.ReadOnlyHint {
		t.Errorf("activity.star_repo_for_authenticated_user: %s %+v", star.DefaultApproval, star.Annotations)
	}
	for _, tl := range disc.Tools {
		var ref Ref
		if err := json.Unmarshal(tl.Ref, &ref); err != nil {
			t.Fatal(err)
		}
		want := sources.ApprovalRequired
		if ref.Method == "GET" || ref.Method == "HEAD" {
			want = sources.ApprovalAuto
		}
		if tl.DefaultApproval != want || *tl.Annotations.DestructiveHint != (ref.Method == "DELETE") {
			t.Errorf("%s (%s): approval %s, annotations %+v", tl.Name, ref.Method, tl.DefaultApproval, tl.Annotations)
		}
	}
	checkTools(t, disc.Tools)
}

// BenchmarkBuildGitHub turns GitHub's REST description into tools.
func BenchmarkBuildGitHub(b *testing.B) {
	doc, err := os.ReadFile(testenv.GitHubSpec(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		disc, err := Build(doc, Options{})
		if err != nil || len(disc.Tools) != 1223 {
			b.Fatalf("%v, %d tools", err, len(disc.Tools))
		}
	}
}
