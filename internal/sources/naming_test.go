package sources

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"listPets":                   "list_pets",
		"repos/get":                  "repos_get",
		"GET /pets/{petId}":          "get_pets_pet_id",
		"HTTPServer":                 "http_server",
		"getHTTPResponseCode":        "get_http_response_code",
		"already_snake":              "already_snake",
		"Kebab-Case-Name":            "kebab_case_name",
		"v2Items":                    "v2_items",
		"apps/list-repos-accessible": "apps_list_repos_accessible",
		"":                           "",
	} {
		if got := SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func tool(name, ref string) Tool {
	return Tool{Name: name, Ref: json.RawMessage(ref)}
}

func TestAssignPathsIsDeterministicAndSuffixesCollisions(t *testing.T) {
	mk := func() []Tool {
		return []Tool{
			tool("pets.list", `{"operation_id":"b"}`),
			tool("pets.list", `{"operation_id":"a"}`),
			tool("pets list!", `{"operation_id":"c"}`),
			tool("query.viewer", `{}`),
			tool(strings.Repeat("very_long_name_", 6), `{}`),
			tool(strings.Repeat("very_long_name_", 6)+"x", `{}`),
		}
	}
	first := AssignPaths("petstore", mk())
	reversed := mk()
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	second := AssignPaths("petstore", reversed)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Fatalf("input order changed the paths (-first +second):\n%s", diff)
	}
	paths := map[string]string{}
	for _, tl := range first {
		if len(tl.Path) > MaxPathLen {
			t.Errorf("%q is longer than %d", tl.Path, MaxPathLen)
		}
		for _, r := range tl.Path {
			if !validNameRune(r) {
				t.Errorf("%q has %q", tl.Path, r)
			}
		}
		if prev, dup := paths[tl.Path]; dup {
			t.Errorf("%q assigned twice (%s)", tl.Path, prev)
		}
		paths[tl.Path] = string(tl.Ref)
	}
	if paths["petstore.pets.list"] != `{"operation_id":"a"}` || paths["petstore.pets.list_2"] != `{"operation_id":"b"}` {
		t.Fatalf("collision order: %v", paths)
	}
	if _, ok := paths["petstore.pets_list"]; !ok {
		t.Fatalf("odd characters not sanitized: %v", paths)
	}
}

func TestAliases(t *testing.T) {
	tools := AssignPaths("github", []Tool{tool("repos.list_for_org", `{}`)})
	want := []string{"github.repos.listForOrg", "githubreposlistfororg"}
	if diff := cmp.Diff(want, tools[0].Aliases); diff != "" {
		t.Fatalf("aliases (-want +got):\n%s", diff)
	}
	tools = AssignPaths("library", []Tool{tool("mutation.addBook", `{}`)})
	want = []string{"library.mutation.add_book", "librarymutationaddbook"}
	if diff := cmp.Diff(want, tools[0].Aliases); diff != "" {
		t.Fatalf("aliases of a camelCase name (-want +got):\n%s", diff)
	}
}
