package handlers_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
)

// elicitClient is an agent's client that answers toolgate's elicitation
// requests with answer and keeps what it was asked.
type elicitClient struct {
	mu     sync.Mutex
	asked  []*mcp.ElicitParams
	answer *mcp.ElicitResult
}

func (e *elicitClient) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params)
	return e.answer, nil
}

func (e *elicitClient) questions() []*mcp.ElicitParams {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), e.asked...)
}

// TestMCPElicitSelfApproval: a held call whose rule allows self-approval
// is put to the agent's client by elicitation when the client can answer
// and the key's owner may decide; otherwise the call waits as before.
func TestMCPElicitSelfApproval(t *testing.T) {
	f := newMCPFixtureWith(t, map[string]string{"TOOLGATE_APPROVAL_WAIT": "4s"})
	// Notes whose text starts with "self" may be approved by their caller;
	// every other write needs someone else.
	f.policy("acme", true, db.PolicyFields{Condition: `tool.method != "GET" && args.body.text.startsWith("self")`,
		Effect: "require_approval", AllowSelfApproval: true, Note: "callers may approve their own notes"})
	f.holdWrites()
	ownerKey := createKey(t, f.owner, acmeKeys, map[string]any{"name": "owner agent"})
	orgID, wsID, owner := f.acme()
	ctx := context.Background()
	note := func(text string) map[string]any {
		return map[string]any{"path": "notes.notes.create_note", "arguments": map[string]any{"body": map[string]any{"text": text}}}
	}
	latest := func(t *testing.T) approvals.Approval {
		t.Helper()
		list, err := f.approvals.List(ctx, orgID, wsID, "", 1)
		if err != nil || len(list) != 1 {
			t.Fatalf("latest approval: %v %v", list, err)
		}
		return list[0]
	}
	pending := func(t *testing.T, res *mcp.CallToolResult, text string) {
		t.Helper()
		b, _ := json.Marshal(res.StructuredContent)
		if res.IsError || !strings.Contains(string(b), `"status":"pending"`) {
			t.Fatalf("want a pending result: %s %s", b, text)
		}
		if a := latest(t); a.Status != approvals.Pending || a.DecidedBy != nil {
			t.Fatalf("the approval should still wait for a person: %+v", a)
		}
	}

	t.Run("approved in the client", func(t *testing.T) {
		ec := &elicitClient{answer: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "comment": "my own note, fine"}}}
		cs := connect(t, f.srv.URL+"/mcp", ownerKey.Key, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: ec.handle})
		before := f.posts()
		res, text := callText(t, cs, "call_tool", note("self approved note"))
		if res.IsError || !strings.Contains(text, "self approved note") {
			t.Fatalf("call_tool: %s", text)
		}
		asked := ec.questions()
		if len(asked) != 1 {
			t.Fatalf("asked %d times", len(asked))
		}
		q, a := asked[0], latest(t)
		for _, want := range []string{"notes.notes.create_note", "self approved note", a.Reason, a.ID} {
			if !strings.Contains(q.Message, want) {
				t.Errorf("elicitation message lacks %q: %s", want, q.Message)
			}
		}
		schema, _ := json.Marshal(q.RequestedSchema)
		if !strings.Contains(string(schema), `"approve":{`) || !strings.Contains(string(schema), `"Approve this call"`) || !strings.Contains(string(schema), `"comment":{`) {
			t.Errorf("requested schema %s", schema)
		}
		if a.Status != approvals.Executed || a.DecidedBy == nil || *a.DecidedBy != owner.UserID ||
			!strings.Contains(a.Comment, "my own note, fine") || !strings.Contains(a.Comment, "agent's client") {
			t.Errorf("approval after the client approved: %+v", a)
		}
		if n := f.posts() - before; n != 1 {
			t.Errorf("upstream posts %d, want 1", n)
		}
	})

	t.Run("declined in the client", func(t *testing.T) {
		ec := &elicitClient{answer: &mcp.ElicitResult{Action: "decline"}}
		cs := connect(t, f.srv.URL+"/mcp", ownerKey.Key, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: ec.handle})
		before := f.posts()
		res, text := callText(t, cs, "call_tool", note("self declined note"))
		if !res.IsError || !strings.Contains(text, "denied") {
			t.Fatalf("call_tool after decline: %s", text)
		}
		if a := latest(t); a.Status != approvals.Denied || a.DecidedBy == nil || *a.DecidedBy != owner.UserID {
			t.Errorf("approval after the decline: %+v", a)
		}
		if len(ec.questions()) != 1 || f.posts() != before {
			t.Errorf("asked %d times, upstream posts %d", len(ec.questions()), f.posts()-before)
		}
	})

	t.Run("cancelled in the client", func(t *testing.T) {
		ec := &elicitClient{answer: &mcp.ElicitResult{Action: "cancel"}}
		cs := connect(t, f.srv.URL+"/mcp", ownerKey.Key, "2025-06-18", &mcp.ClientOptions{ElicitationHandler: ec.handle})
		res, text := callText(t, cs, "call_tool", note("self cancelled note"))
		pending(t, res, text)
		if len(ec.questions()) != 1 {
			t.Errorf("asked %d times", len(ec.questions()))
		}
	})

	t.Run("no answer in time", func(t *testing.T) {
		release := make(chan struct{})
		var asked sync.WaitGroup
		asked.Add(1)
		cs := connect(t, f.srv.URL+"/mcp", ownerKey.Key, "2025-11-25", &mcp.ClientOptions{
			ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Done()
				select {
				case <-release:
				case <-ctx.Done():
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}})
		t.Cleanup(func() { close(release) })
		res, text := callText(t, cs, "call_tool", note("self note, slow client"))
		asked.Wait()
		pending(t, res, text)
	})

	t.Run("rule without self-approval", func(t *testing.T) {
		ec := &elicitClient{answer: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
		cs := connect(t, f.srv.URL+"/mcp", ownerKey.Key, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: ec.handle})
		res, text := callText(t, cs, "call_tool", note("someone else decides"))
		pending(t, res, text)
		if n := len(ec.questions()); n != 0 {
			t.Errorf("the client was asked %d times under a rule without self-approval", n)
		}
	})

	t.Run("caller who may not decide", func(t *testing.T) {
		// The member's key: members decide only as the workspace's approvers.
		ec := &elicitClient{answer: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
		cs := connect(t, f.srv.URL+"/mcp", f.acmeKey.Key, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: ec.handle})
		res, text := callText(t, cs, "call_tool", note("self note of a member"))
		pending(t, res, text)
		if n := len(ec.questions()); n != 0 {
			t.Errorf("a member who may not decide was asked %d times", n)
		}
	})

	t.Run("client without elicitation", func(t *testing.T) {
		cs := connect(t, f.srv.URL+"/mcp", ownerKey.Key, "2025-11-25", nil)
		res, text := callText(t, cs, "call_tool", note("self note, no elicitation"))
		pending(t, res, text)
		// The normal path goes on: a console approver decides, and the
		// agent gets the result once.
		a := latest(t)
		if _, err := f.approvals.Decide(ctx, orgID, wsID, a.ID, owner, true, ""); err != nil {
			t.Fatal(err)
		}
		before := f.posts()
		if res, text := callText(t, cs, "get_approval", map[string]any{"approval_id": a.ID}); res.IsError || !strings.Contains(text, "self note, no elicitation") {
			t.Fatalf("get_approval: %s", text)
		}
		if n := f.posts() - before; n != 1 {
			t.Errorf("upstream posts %d, want 1", n)
		}
	})

	t.Run("stateless protocol", func(t *testing.T) {
		ec := &elicitClient{answer: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
		cs := connect(t, f.srv.URL+"/mcp", ownerKey.Key, "2026-07-28", &mcp.ClientOptions{ElicitationHandler: ec.handle})
		res, text := callText(t, cs, "call_tool", note("self note, stateless"))
		pending(t, res, text)
		if n := len(ec.questions()); n != 0 {
			t.Errorf("a stateless request was asked %d times", n)
		}
	})
}
