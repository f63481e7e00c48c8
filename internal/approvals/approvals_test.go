package approvals_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/validation"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// secretValue is an argument value that must never be stored in the clear.
const secretValue = "sk-live-3f9a1c7e5b2d"

// fixture is an organization with two workspaces and one person per way of
// relating to an approval, a second organization, and two Services on the
// same database standing in for two replicas.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	store  *db.Store
	ring   *secrets.Ring
	a, b   *approvals.Service
	org    db.Organization
	ws     db.Workspace
	ws2    db.Workspace
	other  db.Organization // another tenant
	otherW db.Workspace
	key    db.APIKey // the caller's key, owned by caller

	owner, admin, approver, member, viewer, caller, viewerApprover, otherOwner approvals.Decider
}

// quiet keeps test output to warnings.
var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	entry, err := secrets.NewKeyEntry()
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secrets.ParseRing(entry)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, store: store, ring: ring}
	suffix := strings.ToLower(rand.Text()[:8])
	err = store.InTx(ctx, func(tx *sqlx.Tx) error {
		if f.org, err = db.CreateOrganization(ctx, tx, "apr-"+suffix, "Approvals"); err != nil {
			return err
		}
		if f.other, err = db.CreateOrganization(ctx, tx, "other-"+suffix, "Other"); err != nil {
			return err
		}
		if f.ws, err = db.CreateWorkspace(ctx, tx, f.org.ID, "one", "One"); err != nil {
			return err
		}
		if f.ws2, err = db.CreateWorkspace(ctx, tx, f.org.ID, "two", "Two"); err != nil {
			return err
		}
		if f.otherW, err = db.CreateWorkspace(ctx, tx, f.other.ID, "one", "One"); err != nil {
			return err
		}
		person := func(name string, orgID int64, role auth.Role) (approvals.Decider, error) {
			u, err := db.CreateUser(ctx, tx, name+"-"+suffix+"@example.test", name, "not-a-real-hash")
			if err != nil {
				return approvals.Decider{}, err
			}
			return approvals.Decider{UserID: u.ID, Role: role}, db.AddMember(ctx, tx, orgID, u.ID, string(role))
		}
		for _, p := range []struct {
			d     *approvals.Decider
			name  string
			orgID int64
			role  auth.Role
		}{
			{&f.owner, "owner", f.org.ID, auth.Owner},
			{&f.admin, "admin", f.org.ID, auth.Admin},
			{&f.approver, "approver", f.org.ID, auth.Member},
			{&f.member, "member", f.org.ID, auth.Member},
			{&f.viewer, "viewer", f.org.ID, auth.Viewer},
			{&f.caller, "caller", f.org.ID, auth.Member},
			{&f.viewerApprover, "viewer-approver", f.org.ID, auth.Viewer},
			{&f.otherOwner, "other-owner", f.other.ID, auth.Owner},
		} {
			if *p.d, err = person(p.name, p.orgID, p.role); err != nil {
				return err
			}
		}
		// The approver role of workspace one: a member, and a viewer who
		// still may not decide.
		for _, u := range []int64{f.approver.UserID, f.viewerApprover.UserID} {
			if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_approvers (workspace_id, user_id, org_id, added_by)
				VALUES ($1, $2, $3, $4)`, f.ws.ID, u, f.org.ID, f.owner.UserID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.key, err = store.CreateAPIKey(ctx, db.NewAPIKey{OrgID: f.org.ID, WorkspaceID: f.ws.ID, UserID: f.caller.UserID,
		Name: "ci agent", Prefix: "tg_test", Mode: "search", Hash: []byte(rand.Text()), CreatedBy: f.caller.UserID})
	if err != nil {
		t.Fatal(err)
	}
	f.a = f.service(approvals.Options{})
	f.b = f.service(approvals.Options{})
	return f
}

// service starts one more replica on the fixture's database; it closes
// when the test ends.
func (f *fixture) service(o approvals.Options) *approvals.Service {
	o.Store, o.Ring, o.Logger = f.store, f.ring, quiet
	s := approvals.New(o)
	f.t.Cleanup(s.Close)
	return s
}

// request holds a call to a tool with a secret among its arguments.
func (f *fixture) request(svc *approvals.Service, mutate ...func(*approvals.NewRequest)) approvals.Approval {
	f.t.Helper()
	in := approvals.NewRequest{
		OrgID: f.org.ID, WorkspaceID: f.ws.ID, Tool: "github.delete_repo", SourceID: "src_test",
		Arguments: json.RawMessage(`{"repo": "acme/site", "token": "` + secretValue + `"}`),
		Redacted:  json.RawMessage(`{"repo": "acme/site", "token": "[redacted]"}`),
		KeyID:     &f.key.ID, UserID: &f.caller.UserID, Via: "mcp", Reason: "destructive tools need a second pair of eyes",
	}
	for _, m := range mutate {
		m(&in)
	}
	a, err := svc.Request(f.ctx, in)
	if err != nil {
		f.t.Fatalf("request: %v", err)
	}
	return a
}

// backdate moves a request's expiry into the past.
func (f *fixture) backdate(id string) {
	f.t.Helper()
	if _, err := f.store.DB().ExecContext(f.ctx, `UPDATE approvals SET requested_at = now() - interval '2 hours',
		expires_at = now() - interval '1 hour' WHERE id = $1`, id); err != nil {
		f.t.Fatal(err)
	}
}

// rawStatus reads a request's status straight from the table.
func (f *fixture) rawStatus(id string) string {
	f.t.Helper()
	var s string
	if err := f.store.DB().QueryRowContext(f.ctx, `SELECT status FROM approvals WHERE id = $1`, id).Scan(&s); err != nil {
		f.t.Fatal(err)
	}
	return s
}

func decisionCode(err error) string {
	var de *approvals.DecisionError
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

func TestRequestSealsArgumentsAndShowsRedacted(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	if !strings.HasPrefix(a.ID, "apr_") || len(a.ID) != 30 {
		t.Errorf("id %q: want apr_ and 26 characters", a.ID)
	}
	got, err := f.b.Get(f.ctx, f.org.ID, f.ws.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != approvals.Pending || got.Tool != "github.delete_repo" || got.Via != "mcp" ||
		got.KeyName != "ci agent" || got.UserEmail == "" || got.UserName != "caller" {
		t.Errorf("got %+v", got)
	}
	if d := got.ExpiresAt.Sub(got.RequestedAt); d != approvals.DefaultTTL {
		t.Errorf("expires %v after the request, want the default %v", d, approvals.DefaultTTL)
	}
	var shown map[string]string
	if err := json.Unmarshal(got.Arguments, &shown); err != nil || shown["token"] != "[redacted]" || shown["repo"] != "acme/site" {
		t.Errorf("arguments shown %s (%v), want the redacted copy", got.Arguments, err)
	}

	// Nothing in the row holds the secret in the clear.
	var row string
	if err := f.store.DB().QueryRowContext(f.ctx, `SELECT CAST(a AS text) FROM approvals a WHERE id = $1`, a.ID).Scan(&row); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(row, secretValue) || strings.Contains(row, fmt.Sprintf("%x", secretValue)) {
		t.Errorf("the approval row holds the secret: %s", row)
	}
	var sealed []byte
	if err := f.store.DB().QueryRowContext(f.ctx, `SELECT arguments_sealed FROM approvals WHERE id = $1`, a.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), secretValue) {
		t.Error("the sealed arguments contain the secret")
	}

	// After approval the intact arguments come back, exactly.
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	args, claimed, _, err := f.b.Claim(f.ctx, f.org.ID, a.ID)
	if err != nil || !claimed {
		t.Fatalf("claim: claimed %v, %v", claimed, err)
	}
	if want := `{"repo": "acme/site", "token": "` + secretValue + `"}`; string(args) != want {
		t.Errorf("claimed arguments %s, want %s", args, want)
	}
}

func TestSealedArgumentsDoNotMoveBetweenRows(t *testing.T) {
	f := newFixture(t)
	victim := f.request(f.a)
	other := f.request(f.a, func(in *approvals.NewRequest) { in.Arguments = json.RawMessage(`{"harmless": true}`) })
	// Someone with write access to the table copies the sealed blob over.
	if _, err := f.store.DB().ExecContext(f.ctx, `UPDATE approvals o SET arguments_sealed = v.arguments_sealed,
		arguments_nonce = v.arguments_nonce FROM approvals v WHERE o.id = $1 AND v.id = $2`, other.ID, victim.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, other.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	args, claimed, _, err := f.a.Claim(f.ctx, f.org.ID, other.ID)
	if !errors.Is(err, secrets.ErrOpen) || claimed || args != nil {
		t.Fatalf("claim of moved arguments: %s, %v, %v; want secrets.ErrOpen", args, claimed, err)
	}
	// The call is settled with an error instead of staying executing.
	if s := f.rawStatus(other.ID); s != "executed" {
		t.Errorf("status %s, want executed with an error result", s)
	}
	res, err := f.a.Result(f.ctx, f.org.ID, other.ID)
	if err != nil || !strings.Contains(string(res), "could not be decrypted") || !strings.Contains(string(res), `"isError":true`) {
		t.Errorf("result %s, %v", res, err)
	}
}

func TestRequestRejectsBadInput(t *testing.T) {
	f := newFixture(t)
	_, err := f.a.Request(f.ctx, approvals.NewRequest{OrgID: f.org.ID, WorkspaceID: f.ws.ID, Via: "mcp",
		Arguments: json.RawMessage(`{"a":`), TTL: -time.Second})
	var fields validation.Errors
	if !errors.As(err, &fields) {
		t.Fatalf("err %v, want validation errors", err)
	}
	for _, name := range []string{"tool", "arguments", "ttl"} {
		if fields[name] == "" {
			t.Errorf("no problem named %s in %v", name, fields)
		}
	}
}

func TestWhoMayDecide(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name      string
		who       approvals.Decider
		allowSelf bool
		wantOK    bool
		wantWhy   string
	}{
		{"owner", f.owner, false, true, ""},
		{"admin", f.admin, false, true, ""},
		{"approver member", f.approver, false, true, ""},
		{"plain member", f.member, false, false, "approvers"},
		{"viewer", f.viewer, false, false, "Viewers"},
		{"viewer listed as approver", f.viewerApprover, false, false, "Viewers"},
		{"the caller", f.caller, false, false, "self-approval"},
		{"the caller as an owner", approvals.Decider{UserID: f.caller.UserID, Role: auth.Owner}, false, false, "self-approval"},
		{"the caller, self-approval allowed", approvals.Decider{UserID: f.caller.UserID, Role: auth.Member}, true, false, "approvers"},
		{"the caller as admin, self-approval allowed", approvals.Decider{UserID: f.caller.UserID, Role: auth.Admin}, true, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := f.request(f.a, func(in *approvals.NewRequest) { in.AllowSelfApproval = tc.allowSelf })
			ok, why, err := f.a.CanDecide(f.ctx, a, tc.who)
			if err != nil || ok != tc.wantOK || !strings.Contains(why, tc.wantWhy) {
				t.Fatalf("CanDecide = %v, %q, %v; want %v and a reason mentioning %q", ok, why, err, tc.wantOK, tc.wantWhy)
			}
			got, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, tc.who, false, "no")
			if tc.wantOK {
				if err != nil || got.Status != approvals.Denied || got.DecidedBy == nil || *got.DecidedBy != tc.who.UserID {
					t.Fatalf("Decide = %+v, %v; want denied by %d", got, err, tc.who.UserID)
				}
				return
			}
			var de *approvals.DecisionError
			if !errors.As(err, &de) || de.Code != "forbidden" || de.HTTPStatus() != 403 || de.Message != why {
				t.Fatalf("Decide err %v, want forbidden saying %q", err, why)
			}
			if s := f.rawStatus(a.ID); s != "pending" {
				t.Errorf("status %s after a refused decision, want pending", s)
			}
		})
	}
	// Approvers of workspace one are not approvers of workspace two.
	a2 := f.request(f.a, func(in *approvals.NewRequest) { in.WorkspaceID = f.ws2.ID })
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws2.ID, a2.ID, f.approver, true, ""); decisionCode(err) != "forbidden" {
		t.Errorf("approver of another workspace: %v, want forbidden", err)
	}
}

func TestSecondDecisionIsRefusedAndAudited(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	got, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.approver, true, "  looks right  ")
	if err != nil || got.Status != approvals.Approved || got.Comment != "looks right" || got.DecidedAt == nil ||
		!strings.HasPrefix(got.DecidedByEmail, "approver-") {
		t.Fatalf("first decision: %+v, %v", got, err)
	}
	for _, approve := range []bool{true, false} {
		_, err := f.b.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, approve, "")
		var de *approvals.DecisionError
		if !errors.As(err, &de) || de.Code != "not_pending" || de.HTTPStatus() != 409 ||
			!strings.Contains(de.Message, "already approved by "+got.DecidedByEmail) {
			t.Errorf("second decision (approve=%v): %v, want not_pending naming the first", approve, err)
		}
	}
	if s := f.rawStatus(a.ID); s != "approved" {
		t.Errorf("status %s, want approved", s)
	}

	d := f.request(f.a)
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, d.ID, f.admin, false, "not today"); err != nil {
		t.Fatal(err)
	}
	if _, _, after, err := f.a.Claim(f.ctx, f.org.ID, d.ID); err != nil || after.Status != approvals.Denied {
		t.Errorf("claim of a denied request: %v, %v; want no claim and denied", after.Status, err)
	}

	events, err := f.store.AuditEvents(f.ctx, f.org.ID, 50)
	if err != nil {
		t.Fatal(err)
	}
	byTarget := map[string][]db.AuditEvent{}
	for _, e := range events {
		if e.TargetType == "approval" {
			byTarget[e.TargetID] = append(byTarget[e.TargetID], e)
		}
	}
	check := func(id, action string, actor int64, comment string) {
		t.Helper()
		es := byTarget[id]
		if len(es) != 1 {
			t.Fatalf("%d audit rows for %s, want 1", len(es), id)
		}
		e := es[0]
		var details map[string]string
		_ = json.Unmarshal(e.Details, &details)
		if e.Action != action || e.ActorID == nil || *e.ActorID != actor || e.WorkspaceID == nil || *e.WorkspaceID != f.ws.ID ||
			details["tool"] != "github.delete_repo" || details["comment"] != comment {
			t.Errorf("audit %+v details %s", e, e.Details)
		}
		if strings.Contains(string(e.Details), secretValue) || strings.Contains(string(e.Details), "acme/site") {
			t.Errorf("audit details hold the arguments: %s", e.Details)
		}
	}
	check(a.ID, "approval.approved", f.approver.UserID, "looks right")
	check(d.ID, "approval.denied", f.admin.UserID, "not today")
}

func TestDecisionCommentLimit(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	_, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, strings.Repeat("é", approvals.MaxComment+1))
	var fields validation.Errors
	if !errors.As(err, &fields) || fields["comment"] == "" {
		t.Fatalf("err %v, want a problem on comment", err)
	}
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, strings.Repeat("é", approvals.MaxComment)); err != nil {
		t.Fatalf("a comment of exactly %d characters: %v", approvals.MaxComment, err)
	}
}

func TestExpiry(t *testing.T) {
	f := newFixture(t)

	// Lazily: reading an overdue request marks it, and deciding it says so.
	lazy := f.request(f.a)
	f.backdate(lazy.ID)
	_, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, lazy.ID, f.owner, true, "")
	var de *approvals.DecisionError
	if !errors.As(err, &de) || de.Code != "expired" || !strings.Contains(de.Message, "expired") {
		t.Fatalf("deciding an overdue request: %v, want expired", err)
	}
	if got, err := f.b.Get(f.ctx, f.org.ID, f.ws.ID, lazy.ID); err != nil || got.Status != approvals.Expired || got.DecidedAt != nil {
		t.Errorf("get: %+v, %v; want expired and undecided", got, err)
	}
	if _, claimed, got, err := f.a.Claim(f.ctx, f.org.ID, lazy.ID); claimed || err != nil || got.Status != approvals.Expired {
		t.Errorf("claim of an expired request: %v, %v, %v", claimed, got.Status, err)
	}

	// Periodically: the sweep marks requests nobody reads.
	swept := f.request(f.a)
	fresh := f.request(f.a)
	f.backdate(swept.ID)
	if n, _ := f.a.PendingCount(f.ctx, f.org.ID, f.ws.ID); n != 1 {
		t.Errorf("pending count %d, want 1 (an overdue request is not waiting)", n)
	}
	if err := f.a.Sweep(f.ctx); err != nil {
		t.Fatal(err)
	}
	if s := f.rawStatus(swept.ID); s != "expired" {
		t.Errorf("swept request %s, want expired", s)
	}
	if s := f.rawStatus(fresh.ID); s != "pending" {
		t.Errorf("fresh request %s, want pending", s)
	}

	// By the rule's TTL: a request that lives a few milliseconds ends the
	// wait as expired.
	short := f.request(f.a, func(in *approvals.NewRequest) { in.TTL = 5 * time.Millisecond })
	if d := short.ExpiresAt.Sub(short.RequestedAt); d != 5*time.Millisecond {
		t.Errorf("expires %v after the request, want 5ms", d)
	}
	got, err := f.a.Wait(f.ctx, f.org.ID, short.ID, time.Minute, nil)
	if err != nil || got.Status != approvals.Expired {
		t.Errorf("wait on a short-lived request: %v, %v; want expired", got.Status, err)
	}
}

func TestWaitWokenByAnotherReplica(t *testing.T) {
	f := newFixture(t)
	// This replica polls once an hour, so only the notification can end the
	// wait within its minute; it ticks often, so the test knows it waits.
	waiter := f.service(approvals.Options{PollInterval: time.Hour, TickInterval: 20 * time.Millisecond})
	a := f.request(f.b)
	ticked := make(chan struct{})
	var once sync.Once
	type outcome struct {
		a   approvals.Approval
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		got, err := waiter.Wait(f.ctx, f.org.ID, a.ID, time.Minute, func(waited time.Duration) {
			once.Do(func() { close(ticked) })
		})
		done <- outcome{got, err}
	}()
	<-ticked
	if _, err := f.b.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, "go"); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.err != nil || out.a.Status != approvals.Approved || out.a.Comment != "go" {
		t.Fatalf("wait: %+v, %v; want approved", out.a, out.err)
	}
}

func TestWaitAfterTheDecision(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	if _, err := f.b.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, false, "no"); err != nil {
		t.Fatal(err)
	}
	waiter := f.service(approvals.Options{PollInterval: time.Hour})
	got, err := waiter.Wait(f.ctx, f.org.ID, a.ID, time.Minute, nil)
	if err != nil || got.Status != approvals.Denied {
		t.Fatalf("wait: %v, %v; want denied", got.Status, err)
	}
}

func TestWaitTimesOutPendingAndHonoursContext(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	got, err := f.a.Wait(f.ctx, f.org.ID, a.ID, 50*time.Millisecond, nil)
	if err != nil || got.Status != approvals.Pending || got.ID != a.ID {
		t.Fatalf("wait past its timeout: %v, %v; want still pending, no error", got.Status, err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	if _, err := f.a.Wait(ctx, f.org.ID, a.ID, time.Minute, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with a cancelled context: %v", err)
	}
}

// TestRestartBetweenRequestAndDecision: the replica that held the call
// stops; the decision is made elsewhere while it is down; a new replica
// resumes the wait and runs the call once.
func TestRestartBetweenRequestAndDecision(t *testing.T) {
	f := newFixture(t)
	first := f.service(approvals.Options{})
	a := f.request(first)
	first.Close()
	if _, err := f.b.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.admin, true, "while you were out"); err != nil {
		t.Fatal(err)
	}
	restarted := f.service(approvals.Options{PollInterval: time.Hour})
	got, err := restarted.Wait(f.ctx, f.org.ID, a.ID, time.Minute, nil)
	if err != nil || got.Status != approvals.Approved {
		t.Fatalf("wait after restart: %v, %v", got.Status, err)
	}
	if _, claimed, _, err := restarted.Claim(f.ctx, f.org.ID, a.ID); err != nil || !claimed {
		t.Fatalf("claim after restart: %v, %v", claimed, err)
	}
}

// TestListenerReconnects: when the LISTEN connection dies, the Service
// reconnects and a waiter still hears of the decision without polling.
func TestListenerReconnects(t *testing.T) {
	f := newFixture(t)
	waiter := f.service(approvals.Options{PollInterval: time.Hour, TickInterval: 20 * time.Millisecond})
	a := f.request(f.a)
	ticked := make(chan struct{})
	var once sync.Once
	done := make(chan approvals.Approval, 1)
	go func() {
		got, _ := waiter.Wait(f.ctx, f.org.ID, a.ID, time.Minute, func(time.Duration) { once.Do(func() { close(ticked) }) })
		done <- got
	}()
	<-ticked
	// Cut every listening connection of this database (both fixture
	// replicas' and the waiter's).
	var cut int
	if err := f.store.DB().QueryRowContext(f.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN `+db.ApprovalsChannel+`'`).Scan(&cut); err != nil {
		t.Fatal(err)
	}
	if cut < 3 {
		t.Fatalf("terminated %d listening connections, want at least 3", cut)
	}
	if _, err := f.b.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.Status != approvals.Approved {
		t.Fatalf("wait across a lost connection: %v, want approved", got.Status)
	}
}

func TestClaimRaceRunsOnce(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	// Before approval nobody may claim.
	if _, claimed, got, err := f.b.Claim(f.ctx, f.org.ID, a.ID); claimed || err != nil || got.Status != approvals.Pending {
		t.Fatalf("claim of a pending request: %v, %v, %v", claimed, got.Status, err)
	}
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	const racers = 20
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners int
		args    json.RawMessage
		losers  []approvals.Status
	)
	start := make(chan struct{})
	for i := range racers {
		svc := f.a
		if i%2 == 1 {
			svc = f.b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got, claimed, now, err := svc.Claim(f.ctx, f.org.ID, a.ID)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("claim: %v", err)
				return
			}
			if claimed {
				winners++
				args = got
				return
			}
			if got != nil {
				t.Errorf("a losing claim got the arguments")
			}
			losers = append(losers, now.Status)
		}()
	}
	close(start)
	wg.Wait()
	if winners != 1 || len(losers) != racers-1 {
		t.Fatalf("%d claims won, %d lost; want exactly 1 winner", winners, len(losers))
	}
	for _, s := range losers {
		if s != approvals.Executing {
			t.Errorf("a loser saw %s, want executing", s)
		}
	}
	if !strings.Contains(string(args), secretValue) {
		t.Errorf("the winner got %s, want the intact arguments", args)
	}

	// A loser waits for the winner's outcome.
	result := json.RawMessage(`{"content":[{"type":"text","text":"deleted acme/site"}],"isError":false}`)
	if _, err := f.b.Result(f.ctx, f.org.ID, a.ID); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("result before the execution finished: %v, want not found", err)
	}
	done := make(chan approvals.Approval, 1)
	go func() {
		got, _ := f.b.WaitResult(f.ctx, f.org.ID, a.ID, time.Minute, nil)
		done <- got
	}()
	if err := f.a.Finish(f.ctx, f.org.ID, a.ID, result); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.Status != approvals.Executed || got.ExecutedAt == nil {
		t.Errorf("wait for the result: %+v", got)
	}
	for _, svc := range []*approvals.Service{f.a, f.b} {
		got, err := svc.Result(f.ctx, f.org.ID, a.ID)
		if err != nil || string(got) != string(result) {
			t.Errorf("result %s, %v; want %s", got, err, result)
		}
	}
	// Nothing runs it again, and the outcome is final.
	if _, claimed, now, err := f.b.Claim(f.ctx, f.org.ID, a.ID); claimed || err != nil || now.Status != approvals.Executed {
		t.Errorf("claim after execution: %v, %v, %v", claimed, now.Status, err)
	}
	if err := f.a.Finish(f.ctx, f.org.ID, a.ID, result); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("second finish: %v, want not found", err)
	}
	var raw []byte
	if err := f.store.DB().QueryRowContext(f.ctx, `SELECT result_sealed FROM approvals WHERE id = $1`, a.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "deleted acme/site") {
		t.Error("the stored result is not sealed")
	}
}

func TestStuckExecutionIsSettledNotRerun(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	if _, claimed, _, err := f.a.Claim(f.ctx, f.org.ID, a.ID); !claimed || err != nil {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	// A sweep within the bound leaves a running execution alone.
	if err := f.b.Sweep(f.ctx); err != nil {
		t.Fatal(err)
	}
	if s := f.rawStatus(a.ID); s != "executing" {
		t.Fatalf("status %s, want still executing", s)
	}
	// The replica that claimed it dies; the bound passes.
	if _, err := f.store.DB().ExecContext(f.ctx, `UPDATE approvals SET executed_at = now() - interval '26 minutes' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Sweep(f.ctx); err != nil {
		t.Fatal(err)
	}
	res, err := f.b.Result(f.ctx, f.org.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || !r.IsError || len(r.Content) != 1 || r.Content[0].Text != approvals.StoppedMessage {
		t.Errorf("result %s, want an error saying %q", res, approvals.StoppedMessage)
	}
	if _, claimed, now, err := f.b.Claim(f.ctx, f.org.ID, a.ID); claimed || err != nil || now.Status != approvals.Executed {
		t.Errorf("claim after settlement: %v, %v, %v; want no second run", claimed, now.Status, err)
	}
	// The stopped replica, if it comes back, cannot overwrite the outcome.
	if err := f.a.Finish(f.ctx, f.org.ID, a.ID, json.RawMessage(`{"content":[]}`)); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("late finish: %v, want not found", err)
	}
}

func TestOtherTenantsSeeNothing(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	if _, err := f.a.Get(f.ctx, f.other.ID, f.otherW.ID, a.ID); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("get from another organization: %v", err)
	}
	if _, err := f.a.Get(f.ctx, f.org.ID, f.ws2.ID, a.ID); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("get from another workspace: %v", err)
	}
	if _, err := f.a.Decide(f.ctx, f.other.ID, f.otherW.ID, a.ID, f.otherOwner, true, ""); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("decide from another organization: %v", err)
	}
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws2.ID, a.ID, f.owner, true, ""); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("decide from another workspace: %v", err)
	}
	if _, err := f.a.Wait(f.ctx, f.other.ID, a.ID, time.Second, nil); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("wait from another organization: %v", err)
	}
	if list, err := f.a.List(f.ctx, f.other.ID, f.ws.ID, "", 0); err != nil || len(list) != 0 {
		t.Errorf("list with another organization's id: %d, %v", len(list), err)
	}
	if n, err := f.a.PendingCount(f.ctx, f.other.ID, f.ws.ID); err != nil || n != 0 {
		t.Errorf("pending count with another organization's id: %d, %v", n, err)
	}
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	if _, claimed, _, err := f.a.Claim(f.ctx, f.other.ID, a.ID); claimed || !errors.Is(err, db.ErrNotFound) {
		t.Errorf("claim from another organization: %v, %v", claimed, err)
	}
	if s := f.rawStatus(a.ID); s != "approved" {
		t.Errorf("status %s after another tenant's claim, want approved", s)
	}
	if _, claimed, _, err := f.a.Claim(f.ctx, f.org.ID, a.ID); !claimed || err != nil {
		t.Fatal(err)
	}
	if err := f.a.Finish(f.ctx, f.other.ID, a.ID, json.RawMessage(`{}`)); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("finish from another organization: %v", err)
	}
	if err := f.a.Finish(f.ctx, f.org.ID, a.ID, json.RawMessage(`{"content":[]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Result(f.ctx, f.other.ID, a.ID); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("result from another organization: %v", err)
	}
}

func TestListAndPendingCount(t *testing.T) {
	f := newFixture(t)
	p1 := f.request(f.a)
	p2 := f.request(f.a)
	denied := f.request(f.a)
	overdue := f.request(f.a)
	f.request(f.a, func(in *approvals.NewRequest) { in.WorkspaceID = f.ws2.ID })
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, denied.ID, f.owner, false, ""); err != nil {
		t.Fatal(err)
	}
	f.backdate(overdue.ID)

	if n, err := f.b.PendingCount(f.ctx, f.org.ID, f.ws.ID); err != nil || n != 2 {
		t.Errorf("pending count %d, %v; want 2", n, err)
	}
	ids := func(list []approvals.Approval) []string {
		var out []string
		for _, a := range list {
			out = append(out, a.ID)
		}
		return out
	}
	pending, err := f.b.List(f.ctx, f.org.ID, f.ws.ID, approvals.Pending, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(pending); len(got) != 2 || got[0] != p2.ID || got[1] != p1.ID {
		t.Errorf("pending %v, want [%s %s] (newest first)", got, p2.ID, p1.ID)
	}
	if expired, _ := f.b.List(f.ctx, f.org.ID, f.ws.ID, approvals.Expired, 0); len(expired) != 1 || expired[0].ID != overdue.ID {
		t.Errorf("expired %v, want [%s]", ids(expired), overdue.ID)
	}
	all, err := f.b.List(f.ctx, f.org.ID, f.ws.ID, "", 0)
	if err != nil || len(all) != 4 {
		t.Errorf("all %d, %v; want the workspace's 4", len(all), err)
	}
	if two, _ := f.b.List(f.ctx, f.org.ID, f.ws.ID, "", 2); len(two) != 2 {
		t.Errorf("limit 2 gave %d", len(two))
	}
	_, err = f.b.List(f.ctx, f.org.ID, f.ws.ID, "maybe", 0)
	var fields validation.Errors
	if !errors.As(err, &fields) || fields["status"] == "" {
		t.Errorf("unknown status: %v, want a problem on status", err)
	}
}

func TestSubscribeHearsOtherReplicas(t *testing.T) {
	f := newFixture(t)
	events, cancel := f.a.Subscribe(f.org.ID, f.ws.ID)
	defer cancel()
	otherWS, cancel2 := f.a.Subscribe(f.org.ID, f.ws2.ID)
	defer cancel2()

	a := f.request(f.b)
	next := func() approvals.Event {
		t.Helper()
		for {
			select {
			case e := <-events:
				if e.ID == "" {
					continue // a resync hint from a (re)connect
				}
				return e
			case <-time.After(time.Minute):
				t.Fatal("no event within a minute")
				return approvals.Event{}
			}
		}
	}
	if e := next(); e != (approvals.Event{ID: a.ID, Status: approvals.Pending}) {
		t.Errorf("first event %+v, want the request", e)
	}
	if _, err := f.b.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	if e := next(); e != (approvals.Event{ID: a.ID, Status: approvals.Approved}) {
		t.Errorf("second event %+v, want the approval", e)
	}
	if _, _, _, err := f.b.Claim(f.ctx, f.org.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Status != approvals.Executing {
		t.Errorf("third event %+v, want executing", e)
	}
	if err := f.b.Finish(f.ctx, f.org.ID, a.ID, json.RawMessage(`{"content":[]}`)); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Status != approvals.Executed {
		t.Errorf("fourth event %+v, want executed", e)
	}
	// The other workspace's subscriber heard none of it: its events would
	// have been dispatched with these.
	select {
	case e := <-otherWS:
		if e.ID != "" {
			t.Errorf("another workspace's subscriber got %+v", e)
		}
	default:
	}

	// Cancel closes the channel; Close closes the others.
	cancel()
	if _, open := <-events; open {
		for range events {
		}
	}
	f.a.Close()
	for range otherWS {
	}
}

func TestApprovedButNeverRunExpires(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	// Within its time to live an approved request waits for its caller.
	if err := f.b.Sweep(f.ctx); err != nil {
		t.Fatal(err)
	}
	if s := f.rawStatus(a.ID); s != "approved" {
		t.Fatalf("status %s, want still approved", s)
	}
	// Nobody claims it before it expires: the sweep ends it.
	if _, err := f.store.DB().ExecContext(f.ctx, `UPDATE approvals SET requested_at = now() - interval '2 hours',
		expires_at = now() - interval '1 second' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Sweep(f.ctx); err != nil {
		t.Fatal(err)
	}
	if s := f.rawStatus(a.ID); s != "expired" {
		t.Fatalf("status %s, want expired", s)
	}
	got, err := f.a.Get(f.ctx, f.org.ID, f.ws.ID, a.ID)
	if err != nil || got.Status != approvals.Expired || got.DecidedAt == nil {
		t.Errorf("get: %v %+v, want expired and still showing its decision", err, got)
	}
	if _, claimed, _, err := f.a.Claim(f.ctx, f.org.ID, a.ID); claimed || err != nil {
		t.Errorf("claim after expiry: %v, %v; want nothing to run", claimed, err)
	}
}

func TestApprovedButNeverRunExpiresOnRead(t *testing.T) {
	f := newFixture(t)
	a := f.request(f.a)
	if _, err := f.a.Decide(f.ctx, f.org.ID, f.ws.ID, a.ID, f.owner, true, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.DB().ExecContext(f.ctx, `UPDATE approvals SET requested_at = now() - interval '2 hours',
		expires_at = now() - interval '1 second' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	// Before any sweep, reading it marks it expired.
	if got, err := f.a.Get(f.ctx, f.org.ID, f.ws.ID, a.ID); err != nil || got.Status != approvals.Expired {
		t.Errorf("get: %v %+v, want expired", err, got)
	}
}

func TestDefaultExecutingTimeoutOutlastsASourcesTimeouts(t *testing.T) {
	longest := 2 * sources.MaxTimeoutSeconds * time.Second
	if approvals.DefaultExecutingTimeout <= longest {
		t.Errorf("DefaultExecutingTimeout %v, not longer than a source's connect and call timeouts (%v)", approvals.DefaultExecutingTimeout, longest)
	}
}
