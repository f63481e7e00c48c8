package graphql

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

// sdlRootFields lists the distinct Query and Mutation field names of
// GitHub's SDL straight from the parser, without this package's loading.
func sdlRootFields(t *testing.T, sdl string) map[string]bool {
	t.Helper()
	doc, err := parser.ParseSchema(&ast.Source{Input: sdl})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Schema) > 0 {
		t.Fatal("GitHub's SDL now renames its roots; teach this test")
	}
	names := map[string]bool{}
	for _, list := range []ast.DefinitionList{doc.Definitions, doc.Extensions} {
		for _, def := range list {
			op := map[string]string{"Query": "query.", "Mutation": "mutation."}[def.Name]
			if op == "" {
				continue
			}
			for _, f := range def.Fields {
				names[op+f.Name] = true
			}
		}
	}
	return names
}

// jsonRootFields lists the Query and Mutation field names of an
// introspection result straight from its JSON.
func jsonRootFields(t *testing.T, result []byte) map[string]bool {
	t.Helper()
	var doc struct {
		Schema struct {
			QueryType    struct{ Name string } `json:"queryType"`
			MutationType struct{ Name string } `json:"mutationType"`
			Types        []struct {
				Name   string
				Fields []struct{ Name string }
			}
		} `json:"__schema"`
	}
	if err := json.Unmarshal(result, &doc); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, typ := range doc.Schema.Types {
		op := map[string]string{doc.Schema.QueryType.Name: "query.", doc.Schema.MutationType.Name: "mutation."}[typ.Name]
		if op == "" {
			continue
		}
		for _, f := range typ.Fields {
			names[op+f.Name] = true
		}
	}
	return names
}

func toolNames(d *sources.Discovery) map[string]bool {
	names := map[string]bool{}
	for _, tl := range d.Tools {
		if tl.Name != RawToolName {
			names[tl.Name] = true
		}
	}
	return names
}

func TestGitHubSDL(t *testing.T) {
	sdl := readPeer(t, githubSDLPath)
	start := time.Now()
	d, err := FromSDL(sdl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GitHub SDL (%d KiB): %d tools in %v", len(sdl)>>10, len(d.Tools), time.Since(start))

	want := sdlRootFields(t, sdl)
	if len(d.Tools) != len(want)+1 {
		t.Errorf("%d tools, want %d root fields + the raw tool", len(d.Tools), len(want))
	}
	if diff := cmp.Diff(want, toolNames(d)); diff != "" {
		t.Errorf("tool names (-root fields +tools):\n%s", diff)
	}

	// GitHub defines EnterpriseOwnerInfo.repositoryDeployKeySetting twice,
	// the second time with a description copied from another field.
	var dups []sources.Warning
	for _, w := range d.Warnings {
		if strings.HasPrefix(w.Message, "Defined twice") {
			dups = append(dups, w)
		}
	}
	if len(dups) == 0 {
		t.Fatalf("no duplicate warnings: %v", d.Warnings)
	}
	t.Logf("duplicates: %v", dups)
	schema, _, err := loadSDL(sdl, sdlOrigin)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := parser.ParseSchema(&ast.Source{Input: sdl})
	for _, w := range dups {
		typeName, fieldName, _ := strings.Cut(w.Subject, ".")
		var firstDesc string
		count := 0
		for _, def := range raw.Definitions {
			if def.Name != typeName {
				continue
			}
			for _, f := range def.Fields {
				if f.Name == fieldName {
					if count == 0 {
						firstDesc = f.Description
					}
					count++
				}
			}
		}
		if count < 2 {
			t.Errorf("%s: warned but defined %d times", w.Subject, count)
			continue
		}
		kept := 0
		var keptDesc string
		for _, f := range schema.Types[typeName].Fields {
			if f.Name == fieldName {
				kept++
				keptDesc = f.Description
			}
		}
		if kept != 1 || keptDesc != firstDesc {
			t.Errorf("%s: kept %d definitions, description %q, want the first %q", w.Subject, kept, keptDesc, firstDesc)
		}
	}

	tools := byName(d)
	repo := tools["query.repository"]
	jsonContains(t, "query.repository input", repo.InputSchema, map[string]any{
		"required": []any{"name", "owner"},
	})
	var in struct {
		Properties map[string]struct{ Type string } `json:"properties"`
	}
	_ = json.Unmarshal(repo.InputSchema, &in)
	if in.Properties["owner"].Type != "string" || in.Properties["name"].Type != "string" {
		t.Errorf("query.repository owner/name: %s", repo.InputSchema)
	}
	doc := refOf(t, repo).Document
	for _, part := range []string{"query Repository(", "$owner: String!", "$name: String!", "repository(followRenames: $followRenames, name: $name, owner: $owner) {", " nameWithOwner ", " stargazerCount ", " owner { __typename "} {
		if !strings.Contains(doc, part) {
			t.Errorf("query.repository document lacks %q:\n%s", part, doc)
		}
	}
	if repo.DefaultApproval != sources.ApprovalAuto {
		t.Errorf("query.repository approval = %s", repo.DefaultApproval)
	}
	if star := tools["mutation.addStar"]; star.DefaultApproval != sources.ApprovalRequired || *star.Annotations.ReadOnlyHint {
		t.Errorf("mutation.addStar = %s, %+v", star.DefaultApproval, star.Annotations)
	}

	var longest, total int
	for _, tl := range d.Tools {
		n := len(refOf(t, tl).Document)
		total += n
		longest = max(longest, n)
		if tl.Name != RawToolName {
			validDocument(t, schema, tl.Name, refOf(t, tl).Document)
		}
	}
	t.Logf("documents: %d bytes on average, %d at most", total/len(d.Tools), longest)
	checkSchemas(t, d.Tools)
	q := sources.Measure(d.Tools)
	t.Logf("quality: %+v", q)
}

// jsonContains checks top-level members of a JSON object.
func jsonContains(t *testing.T, what string, raw json.RawMessage, want map[string]any) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for k, v := range want {
		if diff := cmp.Diff(v, got[k]); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", what, k, diff)
		}
	}
}

func TestGitHubIntrospection(t *testing.T) {
	result, err := os.ReadFile(peerPath(t, githubJSONPath))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := FromIntrospection(result)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GitHub introspection JSON (%d KiB): %d tools in %v", len(result)>>10, len(d.Tools), time.Since(start))
	if diff := cmp.Diff(jsonRootFields(t, result), toolNames(d)); diff != "" {
		t.Errorf("tool names (-root fields +tools):\n%s", diff)
	}

	// The package's schema.graphql and schema.json are two snapshots of
	// GitHub's schema, not one schema in two forms: a few root fields exist
	// in only one of them. The tools follow each input exactly (checked
	// above and in TestGitHubSDL); the difference is the inputs'.
	fromSDL, err := FromSDL(readPeer(t, githubSDLPath))
	if err != nil {
		t.Fatal(err)
	}
	sdlNames, jsonNames := toolNames(fromSDL), toolNames(d)
	var onlySDL, onlyJSON []string
	for n := range sdlNames {
		if !jsonNames[n] {
			onlySDL = append(onlySDL, n)
		}
	}
	for n := range jsonNames {
		if !sdlNames[n] {
			onlyJSON = append(onlyJSON, n)
		}
	}
	sort.Strings(onlySDL)
	sort.Strings(onlyJSON)
	t.Logf("only in schema.graphql: %v", onlySDL)
	t.Logf("only in schema.json: %v", onlyJSON)
	if len(onlySDL)+len(onlyJSON) > len(sdlNames)/20 {
		t.Errorf("the SDL and the introspection JSON differ in %d root fields; more than the snapshots' drift", len(onlySDL)+len(onlyJSON))
	}
	// Where both define a field, both build the same tool.
	sdlTools := byName(fromSDL)
	same := 0
	for _, tl := range d.Tools {
		other, ok := sdlTools[tl.Name]
		if !ok {
			continue
		}
		if refOf(t, tl).Document == refOf(t, other).Document && string(tl.InputSchema) == string(other.InputSchema) {
			same++
		}
	}
	t.Logf("%d of %d shared tools are identical from SDL and from JSON", same, len(sdlNames)-len(onlySDL)+1)

	schema, _, err := loadSDL(mustSDL(t, result), introspectionOrigin)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range d.Tools {
		if tl.Name != RawToolName {
			validDocument(t, schema, tl.Name, refOf(t, tl).Document)
		}
	}
	checkSchemas(t, d.Tools)
}

func mustSDL(t *testing.T, result []byte) string {
	t.Helper()
	sdl, err := introspectionSDL(result)
	if err != nil {
		t.Fatal(err)
	}
	return sdl
}

func BenchmarkGitHubSDL(b *testing.B) {
	sdl, err := os.ReadFile(testenv.PeerPath(b, githubSDLPath))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromSDL(string(sdl)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGitHubIntrospection(b *testing.B) {
	result, err := os.ReadFile(testenv.PeerPath(b, githubJSONPath))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromIntrospection(result); err != nil {
			b.Fatal(err)
		}
	}
}
