package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

func TestGraphQLCalls(t *testing.T) {
	e := newEnv(t)
	yoga := testenv.StartYoga(t)
	src := e.source(e.a, &e.a.ws, "Library", sources.TypeGraphQL, map[string]any{"endpoint": yoga})
	c := e.a.caller()

	res := e.call(c, e.toolPath(src, "query.book"), `{"id": "b1"}`)
	if res.IsError || !strings.Contains(text(res), `"title": "The Dispossessed"`) {
		t.Fatalf("book: %s", text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"book":{`) || !strings.Contains(string(b), `"The Dispossessed"`) {
		t.Errorf("structured content %s", b)
	}
	if row := e.rec.last(t); row.Outcome != audit.OutcomeOK || row.UpstreamStatus != 200 {
		t.Errorf("audit row %+v", row)
	}

	// Null data for a field is an answer, not an error.
	if res := e.call(c, e.toolPath(src, "query.book"), `{"id": "nope"}`); res.IsError || !strings.Contains(text(res), `"book": null`) {
		t.Errorf("missing book: %s", text(res))
	}

	// A mutation, then the raw tool reads what it wrote.
	res = e.call(c, e.toolPath(src, "mutation.addBook"), `{"input": {"title": "Lathe of Heaven", "authorId": "a1", "year": 1971}}`)
	if res.IsError || !strings.Contains(text(res), "Lathe of Heaven") {
		t.Fatalf("addBook: %s", text(res))
	}
	raw := e.toolPath(src, ".graphql")
	res = e.call(c, raw, `{"query": "query Titles($n: Int) { books(first: $n, order: OLDEST) { title } }", "variables": {"n": 5}}`)
	if res.IsError || !strings.Contains(text(res), "Lathe of Heaven") || !strings.Contains(text(res), "The Dispossessed") {
		t.Errorf("raw: %s", text(res))
	}

	// Errors without data are a tool error that shows them.
	res = e.call(c, raw, `{"query": "{ nope }"}`)
	if !res.IsError || !strings.Contains(text(res), `"errors"`) || !strings.Contains(text(res), "nope") {
		t.Errorf("bad query: isError %v, %s", res.IsError, text(res))
	}
	if row := e.rec.last(t); row.Outcome != audit.OutcomeError {
		t.Errorf("audit row %+v", row)
	}
}

// An endpoint that wants a header, and echoes a wrong one in its refusal
// as careless endpoints do.
func TestGraphQLCredential(t *testing.T) {
	e := newEnv(t)
	const secret, wrong = "gql-canary-5521aa", "member-wrong-canary-9911"
	yoga := testenv.StartYoga(t, "--require-header", "X-Api-Key="+secret)
	raw, _ := json.Marshal(map[string]any{"endpoint": yoga})
	// Discovery needs the credential: the source is saved failed first.
	src, err := e.sources.Create(context.Background(), e.a.org.ID, nil, sources.Input{Name: "Guarded", Type: sources.TypeGraphQL,
		Scope: sources.ScopeOrganization, Config: raw, ActorID: e.a.owner.UserID})
	if err != nil {
		t.Fatal(err)
	}
	key := credentials.Auth{Type: credentials.TypeAPIKey, In: "header", Name: "X-Api-Key"}
	e.credential(e.a, nil, e.a.owner, src, credentials.ScopeOrganization, key, credentials.Secret{Value: secret})
	book := e.toolPath(src, "query.book")

	if res := e.call(e.a.caller(), book, `{"id": "b1"}`); res.IsError || !strings.Contains(text(res), "The Dispossessed") {
		t.Fatalf("with the credential: %s", text(res))
	}

	// The member's own credential wins, is wrong, and is echoed back.
	e.credential(e.a, &e.a.ws, e.a.member, src, credentials.ScopeAccount, key, credentials.Secret{Value: wrong})
	member := e.a.caller()
	member.UserID = e.a.member.UserID
	res := e.call(member, book, `{"id": "b1"}`)
	if !res.IsError || !strings.Contains(text(res), "HTTP 401") || strings.Contains(text(res), wrong) || !strings.Contains(text(res), sources.Mask) {
		t.Errorf("with the wrong credential: isError %v, %s", res.IsError, text(res))
	}
	if row := e.rec.last(t); row.Outcome != audit.OutcomeError || row.UpstreamStatus != 401 || strings.Contains(row.Error, wrong) {
		t.Errorf("audit row %+v", row)
	}
}
