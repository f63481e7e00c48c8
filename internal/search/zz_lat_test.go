package search_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/testenv"
)

func TestZZLatency(t *testing.T) {
	if os.Getenv("EXPERIMENT") == "" {
		t.Skip()
	}
	url, key := testenv.Meili(t)
	m := newMeiliAt(t, url, key)
	ctx := context.Background()
	var docs []search.Doc
	for i := range 100 {
		docs = append(docs, search.Doc{ID: search.DocID("s", string(rune('a'+i%26))+strings.Repeat("z", i)), OrgID: 1, Scope: "organization", Path: "x.y", Description: strings.Repeat("lorem ipsum y ", 70), Enabled: true})
	}
	if err := m.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var lib, raw time.Duration
	for range 20 {
		s := time.Now()
		m.Search(ctx, search.Query{OrgID: 1, WorkspaceID: 1, Text: "y", Limit: 20})
		lib += time.Since(s)
		s = time.Now()
		body := []byte(`{"q":"y","limit":20,"filter":"org_id = 1"}`)
		req, _ := http.NewRequest("POST", url+"/indexes/"+m.IndexName()+"/search", io.NopCloser(bytes.NewReader(body)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		raw += time.Since(s)
	}
	t.Logf("library %v, raw %v per query", lib/20, raw/20)
}
