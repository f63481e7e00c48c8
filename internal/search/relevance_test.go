package search_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/search/relevance"
)

// relevanceCorpus stores GitHub as an organization source and the peers as
// sources of the first workspace, in PostgreSQL and in a fresh index.
func relevanceCorpus(t *testing.T) (*db.Store, *search.Meili, tenant) {
	t.Helper()
	store := openStore(t)
	meili := newMeili(t)
	tn := newTenant(t, store, "acme", "platform")
	_, docs := addSource(t, store, tn.org.ID, nil, "openapi", "GitHub", "github", githubDiscovery(t), true)
	for ns, d := range peerDiscoveries(t) {
		_, more := addSource(t, store, tn.org.ID, &tn.ws[0], "mcp", "MCP "+ns, ns, d, true)
		docs = append(docs, more...)
	}
	if err := meili.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, d := range docs {
		known[d.Path] = true
	}
	for _, l := range relevance.Set {
		for _, w := range l.Want {
			if !known[w] {
				t.Fatalf("labelled tool %s (for %q) is not in the corpus", w, l.Text)
			}
		}
	}
	return store, meili, tn
}

// recallAt5 runs the labelled set and returns recall@5 and the misses.
func recallAt5(t *testing.T, idx search.Index, orgID, workspaceID int64) (float64, []string) {
	t.Helper()
	found := 0
	var misses []string
	for _, l := range relevance.Set {
		res, err := idx.Search(context.Background(), search.Query{OrgID: orgID, WorkspaceID: workspaceID, Text: l.Text, Limit: 5})
		if err != nil {
			t.Fatalf("search %q: %v", l.Text, err)
		}
		got := paths(res)
		if slices.ContainsFunc(l.Want, func(w string) bool { return slices.Contains(got, w) }) {
			found++
			continue
		}
		misses = append(misses, l.Text+" → want "+strings.Join(l.Want, " or ")+", got "+strings.Join(got, ", "))
	}
	sort.Strings(misses)
	return float64(found) / float64(len(relevance.Set)), misses
}

func TestRelevance(t *testing.T) {
	if len(relevance.Set) < 40 {
		t.Fatalf("the labelled set has %d queries; keep at least 40", len(relevance.Set))
	}
	store, meili, tn := relevanceCorpus(t)
	ws := tn.ws[0].ID

	recall, misses := recallAt5(t, meili, tn.org.ID, ws)
	t.Logf("meilisearch recall@5 = %.3f (%d queries)", recall, len(relevance.Set))
	for _, m := range misses {
		t.Logf("  meilisearch miss: %s", m)
	}
	if recall < 0.9 {
		t.Errorf("meilisearch recall@5 = %.3f, want at least 0.9", recall)
	}

	recall, misses = recallAt5(t, search.Postgres{Store: store}, tn.org.ID, ws)
	t.Logf("postgresql fallback recall@5 = %.3f", recall)
	for _, m := range misses {
		t.Logf("  fallback miss: %s", m)
	}
	if recall <= 0.5 {
		t.Errorf("fallback recall@5 = %.3f, want more than 0.5", recall)
	}
}
