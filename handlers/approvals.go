package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/validation"
	viewapprovals "github.com/toolgate/toolgate/views/approvals"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/paths"
	"github.com/toolgate/toolgate/views/ui"
	viewworkspaces "github.com/toolgate/toolgate/views/workspaces"
)

// approvalRoutes are the console's approval pages of a workspace. Every
// member of the organization sees them and may listen to the event stream;
// deciding takes at least the member role here, and the service decides
// the rest (owners, admins and the workspace's approvers; never the caller
// itself unless the rule allows it).
func (s *Server) approvalRoutes(ws *echo.Group) {
	ws.GET("", s.approvalsPage)
	ws.GET("/events", s.approvalEvents)
	ws.GET("/badge", s.approvalBadge)
	ws.GET("/:id", s.approvalPage)
	ws.POST("/:id/approve", s.decideApproval(true), requireRole(auth.Member))
	ws.POST("/:id/deny", s.decideApproval(false), requireRole(auth.Member))
	ws.POST("/:id/run", s.runApproval, requireRole(auth.Member))
}

// apiApprovalRoutes are the approval API of a workspace, with the same
// rules as the console.
func (s *Server) apiApprovalRoutes(ws *echo.Group) {
	ws.GET("", s.apiApprovals)
	ws.GET("/:id", s.apiApproval)
	ws.POST("/:id/approve", s.apiDecideApproval(true), requireRole(auth.Member))
	ws.POST("/:id/deny", s.apiDecideApproval(false), requireRole(auth.Member))
}

// approverRoutes manage a workspace's approver role, on the console (the
// workspace settings page posts here) and in the API. Owners and admins only.
func (s *Server) approverRoutes(ws, api *echo.Group) {
	ws.POST("", s.addApprover, requireRole(auth.Admin))
	ws.POST("/:user/remove", s.removeApprover, requireRole(auth.Admin))
	api.GET("", s.apiApprovers, requireRole(auth.Admin))
	api.PUT("/:user", s.apiAddApprover, requireRole(auth.Admin))
	api.DELETE("/:user", s.apiRemoveApprover, requireRole(auth.Admin))
}

// Sizes of the approval lists: the console's page, and the API's default
// and largest.
const (
	approvalsPageSize     = 50
	approvalsDefaultLimit = 50
	approvalsMaxLimit     = 200
)

// approvalStatus reads the status filter: "" or "all" is every request; an
// unknown one is a validation error naming the field.
func approvalStatus(v string) (approvals.Status, error) {
	switch st := approvals.Status(strings.TrimSpace(v)); {
	case st == "" || st == "all":
		return "", nil
	case st.Valid():
		return st, nil
	}
	return "", validation.Field("status", "Choose pending, approved, denied, expired, executing, executed or all.")
}

// decider is the signed-in person deciding, with their role here.
func decider(c echo.Context) approvals.Decider {
	return approvals.Decider{UserID: mustUser(c).ID, Role: roleOf(c)}
}

// approvalOf loads the route's request (:id) within its workspace; another
// workspace's or organization's is db.ErrNotFound.
func (s *Server) approvalOf(c echo.Context) (approvals.Approval, error) {
	return s.approvals.Get(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, c.Param("id"))
}

// ---- Console ----

func approvalsURL(c echo.Context) string { return paths.Approvals(orgOf(c).Slug, workspaceOf(c).Slug) }

// withStatus adds the status filter to the list's URL; pending is the default.
func withStatus(base string, st approvals.Status, all bool) string {
	switch {
	case all:
		return base + "?status=all"
	case st == "" || st == approvals.Pending:
		return base
	}
	return base + "?status=" + url.QueryEscape(string(st))
}

func (s *Server) approvalsPage(c echo.Context) error {
	raw := c.QueryParam("status")
	if raw == "" {
		raw = string(approvals.Pending)
	}
	st, err := approvalStatus(raw)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "Unknown status "+strconv.Quote(raw)+": choose one of the tabs.")
	}
	all := st == ""
	found, err := s.approvals.List(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, st, approvalsPageSize)
	if err != nil {
		return err
	}
	base := approvalsURL(c)
	self := withStatus(base, st, all)
	body := viewapprovals.ListBody{Status: string(st), FragmentURL: self, CSRF: csrfToken(c),
		Truncated: len(found) == approvalsPageSize}
	if body.Cards, err = s.approvalCards(c, found, self); err != nil {
		return err
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, viewapprovals.Body(body))
	}
	m, err := s.meta(c, "Approvals", "approvals")
	if err != nil {
		return err
	}
	p := viewapprovals.Page{Meta: m, Body: body}
	for _, t := range viewapprovals.Statuses {
		tabAll := t.Status == ""
		p.Tabs = append(p.Tabs, viewapprovals.Tab{Label: t.Label, Status: t.Status,
			URL: withStatus(base, approvals.Status(t.Status), tabAll), Current: tabAll == all && t.Status == string(st)})
	}
	return render(c, http.StatusOK, viewapprovals.List(p))
}

func (s *Server) approvalPage(c echo.Context) error {
	a, err := s.approvalOf(c)
	if err != nil {
		return err
	}
	self := paths.Approval(orgOf(c).Slug, workspaceOf(c).Slug, a.ID)
	cards, err := s.approvalCards(c, []approvals.Approval{a}, self)
	if err != nil {
		return err
	}
	d := viewapprovals.Detail{ListURL: approvalsURL(c), FragmentURL: self, Card: cards[0]}
	if d.Run, err = s.approvalRun(c, a, self); err != nil {
		return err
	}
	return s.renderApproval(c, d, a)
}

// renderApproval answers htmx with the request's body and anyone else
// with its page.
func (s *Server) renderApproval(c echo.Context, d viewapprovals.Detail, a approvals.Approval) error {
	if isHTMX(c) {
		return render(c, http.StatusOK, viewapprovals.RequestBody(d))
	}
	var err error
	if d.Meta, err = s.meta(c, "Approval: "+a.Tool, "approvals"); err != nil {
		return err
	}
	return render(c, http.StatusOK, viewapprovals.Request(d))
}

// isRequester reports whether the signed-in person asked for a: only they
// may run it, and see its result, for it runs as them.
func isRequester(c echo.Context, a approvals.Approval) bool {
	return a.UserID != nil && *a.UserID == mustUser(c).ID
}

// approvalRun is the requester's part of a request's page: Run now while
// approved (members and above; viewers cannot run tools), the stored
// outcome once executed; nil for everyone else.
func (s *Server) approvalRun(c echo.Context, a approvals.Approval, self string) (*viewapprovals.Run, error) {
	if !isRequester(c, a) {
		return nil, nil
	}
	switch a.Status {
	case approvals.Approved:
		if !roleOf(c).AtLeast(auth.Member) {
			return nil, nil
		}
		return &viewapprovals.Run{CanRun: true, Action: self + "/run", CSRF: csrfToken(c)}, nil
	case approvals.Executed:
		b, err := s.approvals.Result(c.Request().Context(), orgOf(c).ID, a.ID)
		if err != nil {
			return nil, err
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(b, &res); err != nil {
			return nil, fmt.Errorf("read the result of approval %s: %w", a.ID, err)
		}
		r := tryResult(&res, 0)
		r.Duration = "" // not known for a stored result
		return &viewapprovals.Run{Result: r}, nil
	}
	return nil, nil
}

// runApproval runs the signed-in person's approved call through the
// gateway, as an agent resuming it would (once, with the approved
// arguments), and shows the outcome on the request's page. Someone
// else's request is not found: it would run with its requester's
// credentials.
func (s *Server) runApproval(c echo.Context) error {
	a, err := s.approvalOf(c)
	if err != nil {
		return err
	}
	if !isRequester(c, a) {
		return db.ErrNotFound
	}
	started := time.Now()
	res, err := s.gateway.Resume(c.Request().Context(), consoleCaller(c), a.ID, "", nil, nil)
	var nf *gateway.ApprovalNotFoundError
	switch {
	case errors.As(err, &nf):
		return db.ErrNotFound
	case err != nil:
		return fmt.Errorf("run approval %s: %w", a.ID, err)
	}
	self := paths.Approval(orgOf(c).Slug, workspaceOf(c).Slug, a.ID)
	if a, err = s.approvalOf(c); err != nil {
		return err
	}
	cards, err := s.approvalCards(c, []approvals.Approval{a}, self)
	if err != nil {
		return err
	}
	d := viewapprovals.Detail{ListURL: approvalsURL(c), FragmentURL: self, Card: cards[0],
		Run: &viewapprovals.Run{Result: tryResult(res, time.Since(started))}}
	if d.Run.Result.Held != nil {
		// Not run by this request (still pending, or running elsewhere):
		// the page shows where it stands.
		if d.Run, err = s.approvalRun(c, a, self); err != nil {
			return err
		}
	}
	return s.renderApproval(c, d, a)
}

// approvalCards builds the cards of requests for the signed-in person:
// the rule that held each, and, for pending ones, whether they may decide
// (and why not). back is where a decision returns to.
func (s *Server) approvalCards(c echo.Context, list []approvals.Approval, back string) ([]viewapprovals.Card, error) {
	ctx, org, w := c.Request().Context(), orgOf(c), workspaceOf(c)
	var ids []int64
	for _, a := range list {
		if a.PolicyID != nil {
			ids = append(ids, *a.PolicyID)
		}
	}
	rules, err := s.store.ApprovalRules(ctx, org.ID, ids)
	if err != nil {
		return nil, err
	}
	now, d := time.Now(), decider(c)
	cards := make([]viewapprovals.Card, 0, len(list))
	for _, a := range list {
		card := viewapprovals.Card{ID: a.ID, URL: paths.Approval(org.Slug, w.Slug, a.ID), Tool: a.Tool,
			ToolURL: toolURL(c, a.Tool), Key: approvalKey(a), User: approvalUser(a), Reason: a.Reason,
			Arguments: indent(a.Arguments), Status: string(a.Status), RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt,
			DecidedAt: a.DecidedAt, DecidedBy: a.DecidedByEmail, Comment: a.Comment, ExecutedAt: a.ExecutedAt, Now: now}
		card.Rule, card.RuleURL = ruleLink(org.Slug, w.Slug, a.PolicyID, rules)
		if a.Status == approvals.Pending {
			ok, why, err := s.approvals.CanDecide(ctx, a, d)
			if err != nil {
				return nil, err
			}
			card.Decide = &viewapprovals.Decision{CanDecide: ok, Why: why, CSRF: csrfToken(c), Back: back,
				ApproveURL: card.URL + "/approve", DenyURL: card.URL + "/deny"}
		}
		cards = append(cards, card)
	}
	return cards, nil
}

// ruleLink names the rule that held a request and links its edit page.
func ruleLink(org, ws string, id *int64, rules map[int64]db.ApprovalRule) (label, href string) {
	if id == nil {
		return "Tool default (no rule)", ""
	}
	r, ok := rules[*id]
	if !ok {
		return "A rule since deleted", ""
	}
	label, href = "Organization rule", paths.OrgPolicies(org)
	if r.WorkspaceID != nil {
		label, href = "Workspace rule", paths.WorkspacePolicies(org, ws)
	}
	if r.Note != "" {
		label += ": " + r.Note
	}
	return label, href + "/" + strconv.FormatInt(r.ID, 10) + "/edit"
}

// approvalKey names a request's key: its name, "Console", or "Deleted key".
func approvalKey(a approvals.Approval) string {
	switch {
	case a.KeyName != "":
		return a.KeyName
	case a.Via == "console":
		return "Console"
	}
	return "Deleted key"
}

// approvalUser names a request's user: their name, else their email.
func approvalUser(a approvals.Approval) string {
	switch {
	case a.UserName != "":
		return a.UserName
	case a.UserEmail != "":
		return a.UserEmail
	}
	return "–"
}

// decideApproval approves or denies from the console, then returns to the
// page the form came from with a flash. Refusals (403, 409) show as an
// alert or an error page with the service's sentence.
func (s *Server) decideApproval(approve bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		comment, back := c.FormValue("comment"), localPath(c.FormValue("back"))
		if back == paths.Home {
			back = approvalsURL(c)
		}
		a, err := s.approvals.Decide(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, c.Param("id"), decider(c), approve, comment)
		if err != nil {
			return err
		}
		verb := "Approved"
		if !approve {
			verb = "Denied"
		}
		s.flash(c, "success", verb+" "+a.Tool+".")
		return s.seeOther(c, back)
	}
}

func (s *Server) approvalBadge(c echo.Context) error {
	org, w := orgOf(c), workspaceOf(c)
	n, err := s.approvals.PendingCount(c.Request().Context(), org.ID, w.ID)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, layout.PendingCount(org.Slug, w.Slug, n))
}

// approvalHeartbeat is how often an idle event stream sends a comment, so
// proxies keep it open and a vanished client is noticed.
const approvalHeartbeat = 20 * time.Second

// approvalEvents streams the workspace's approval changes as server-sent
// events: "event: approval" with the request's id as data, from whichever
// replica made the change. A client reconnecting (Last-Event-ID) gets one
// event at once, since it may have missed some. The stream ends when the
// client goes away, the approvals service closes, or the server shuts down.
func (s *Server) approvalEvents(c echo.Context) error {
	req, res := c.Request(), c.Response()
	events, cancel := s.approvals.Subscribe(orgOf(c).ID, workspaceOf(c).ID)
	defer cancel()
	rc := http.NewResponseController(res)
	h := res.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	res.WriteHeader(http.StatusOK)
	seq := 0
	if id, err := strconv.Atoi(req.Header.Get("Last-Event-ID")); err == nil {
		seq = id
	}
	// The first message only sets the event id, so that a reconnect says it
	// is one; a reconnect also gets an event, to re-read what it shows.
	first := fmt.Sprintf("retry: 2000\nid: %d\n\n", seq)
	if req.Header.Get("Last-Event-ID") != "" {
		seq++
		first += fmt.Sprintf("event: approval\nid: %d\ndata: resync\n\n", seq)
	}
	if err := writeEvent(rc, res, first); err != nil {
		return nil
	}
	heartbeat := time.NewTicker(approvalHeartbeat)
	defer heartbeat.Stop()
	closing := s.shutdowns.of(req)
	for {
		var msg string
		select {
		case <-req.Context().Done():
			return nil
		case <-closing:
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			data := ev.ID
			if data == "" {
				data = "resync"
			}
			seq++
			msg = fmt.Sprintf("event: approval\nid: %d\ndata: %s\n\n", seq, data)
		case <-heartbeat.C:
			msg = ": heartbeat\n\n"
		}
		if err := writeEvent(rc, res, msg); err != nil {
			return nil // the client went away
		}
	}
}

func writeEvent(rc *http.ResponseController, res *echo.Response, msg string) error {
	if _, err := res.Write([]byte(msg)); err != nil {
		return err
	}
	return rc.Flush()
}

// shutdowns gives long-lived responses one channel per http.Server, closed
// when that server begins shutting down (http.Server.Shutdown runs its
// RegisterOnShutdown hooks first). Shutdown does not cancel request
// contexts, and waits for active requests; without this an open event
// stream would hold shutdown for its whole grace period.
type shutdowns struct {
	mu   sync.Mutex
	done map[*http.Server]chan struct{}
}

// of returns the closing channel of the server serving r; nil (never
// ready) when r did not come through an http.Server.
func (sd *shutdowns) of(r *http.Request) <-chan struct{} {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return nil
	}
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if sd.done == nil {
		sd.done = map[*http.Server]chan struct{}{}
	}
	ch, ok := sd.done[srv]
	if !ok {
		ch = make(chan struct{})
		sd.done[srv] = ch
		// The closed channel stays in the map: a request that slips in
		// during shutdown gets it and ends at once. Shutdown may run twice.
		var once sync.Once
		srv.RegisterOnShutdown(func() { once.Do(func() { close(ch) }) })
	}
	return ch
}

// ---- Console: approvers (workspace settings) ----

// approverInput is the add-approver form as submitted, with its error.
type approverInput struct {
	Selected string
	Error    string
}

// approversSection builds the settings page's approvers section.
func (s *Server) approversSection(c echo.Context, in approverInput) (*viewworkspaces.Approvers, error) {
	ctx, org, w := c.Request().Context(), orgOf(c), workspaceOf(c)
	base := paths.Workspace(org.Slug, w.Slug) + "/approvers"
	sec := &viewworkspaces.Approvers{CSRF: csrfToken(c), Action: base, Selected: in.Selected, Error: in.Error}
	found, err := s.store.Approvers(ctx, org.ID, w.ID)
	if err != nil {
		return nil, err
	}
	taken := map[int64]bool{}
	for _, a := range found {
		taken[a.UserID] = true
		row := viewworkspaces.ApproverRow{UserID: strconv.FormatInt(a.UserID, 10), Name: a.Name, Email: a.Email,
			Role: a.Role, CreatedAt: a.CreatedAt, RemoveURL: base + "/" + strconv.FormatInt(a.UserID, 10) + "/remove"}
		if a.AddedBy != nil {
			row.AddedBy = *a.AddedBy
		}
		sec.Rows = append(sec.Rows, row)
	}
	members, err := s.store.Members(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if auth.Role(m.Role) == auth.Member && !taken[m.UserID] {
			label := m.Email
			if m.Name != "" {
				label = m.Name + " (" + m.Email + ")"
			}
			sec.Candidates = append(sec.Candidates, ui.Option{Value: strconv.FormatInt(m.UserID, 10), Label: label})
		}
	}
	return sec, nil
}

func (s *Server) addApprover(c echo.Context) error {
	raw := c.FormValue("user_id")
	err := s.grantApprover(c, raw)
	var problems validation.Errors
	if errors.As(err, &problems) {
		w := workspaceOf(c)
		return s.renderWorkspaceSettings(c, http.StatusUnprocessableEntity, viewworkspaces.Form{Name: w.Name, Slug: w.Slug},
			viewworkspaces.DeleteForm{}, approverInput{Selected: raw, Error: problems["user_id"]})
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Approver added: they can now decide this workspace's approval requests.")
	return s.seeOther(c, paths.WorkspaceSettings(orgOf(c).Slug, workspaceOf(c).Slug))
}

func (s *Server) removeApprover(c echo.Context) error {
	id, err := pathID(c, "user")
	if err != nil {
		return err
	}
	if err := s.store.RemoveApprover(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, id, actorID(c)); err != nil {
		return err
	}
	s.flash(c, "success", "Approver removed.")
	return s.seeOther(c, paths.WorkspaceSettings(orgOf(c).Slug, workspaceOf(c).Slug))
}

// grantApprover gives the workspace's approver role to the member named by
// raw (a user id). Only members with the member role qualify: owners and
// admins decide anyway, viewers may not decide at all, and anyone outside
// the organization is not a choice. Refusals are validation errors on
// user_id.
func (s *Server) grantApprover(c echo.Context, raw string) error {
	ctx, org, w := c.Request().Context(), orgOf(c), workspaceOf(c)
	id, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || id <= 0 {
		return validation.Field("user_id", "Choose a member to make an approver.")
	}
	m, err := s.store.Member(ctx, org.ID, id)
	if errors.Is(err, db.ErrNotFound) {
		return validation.Field("user_id", "This person is not a member of the organization; invite them first.")
	} else if err != nil {
		return err
	}
	switch auth.Role(m.Role) {
	case auth.Viewer:
		return validation.Field("user_id", m.Email+" is a viewer, and viewers cannot decide approvals: make them a member first.")
	case auth.Owner, auth.Admin:
		return validation.Field("user_id", m.Email+" is an "+m.Role+" and already decides every approval request.")
	}
	err = s.store.AddApprover(ctx, org.ID, w.ID, id, actorID(c))
	if errors.Is(err, db.ErrNotFound) {
		// The role changed between the check and the insert.
		return validation.Field("user_id", m.Email+" no longer has the member role; reload and try again.")
	}
	return err
}

// ---- JSON API ----

// approvalJSON is one request in the API: the redacted arguments only,
// never the sealed ones or the result.
type approvalJSON struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	SourceID  string          `json:"source_id"`
	Arguments json.RawMessage `json:"arguments"`
	Status    string          `json:"status"`
	Via       string          `json:"via"`
	KeyID     *int64          `json:"key_id"`
	KeyName   *string         `json:"key_name"`
	UserID    *int64          `json:"user_id"`
	UserEmail *string         `json:"user_email"`
	// PolicyID is the rule that held the call; null for a tool's default.
	PolicyID          *int64  `json:"policy_id"`
	Reason            string  `json:"reason"`
	AllowSelfApproval bool    `json:"allow_self_approval"`
	RequestedAt       string  `json:"requested_at"`
	ExpiresAt         string  `json:"expires_at"`
	DecidedAt         *string `json:"decided_at"`
	DecidedBy         *int64  `json:"decided_by"`
	DecidedByEmail    *string `json:"decided_by_email"`
	Comment           string  `json:"comment"`
	ExecutedAt        *string `json:"executed_at"`
	// URL is the request's console page, the link for approvers.
	URL string `json:"url"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) toApprovalJSON(c echo.Context, a approvals.Approval) approvalJSON {
	args := a.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return approvalJSON{ID: a.ID, Tool: a.Tool, SourceID: a.SourceID, Arguments: args, Status: string(a.Status),
		Via: a.Via, KeyID: a.KeyID, KeyName: optString(a.KeyName), UserID: a.UserID, UserEmail: optString(a.UserEmail),
		PolicyID: a.PolicyID, Reason: a.Reason, AllowSelfApproval: a.AllowSelfApproval,
		RequestedAt: a.RequestedAt.UTC().Format(timeFormat), ExpiresAt: a.ExpiresAt.UTC().Format(timeFormat),
		DecidedAt: optTime(a.DecidedAt), DecidedBy: a.DecidedBy, DecidedByEmail: optString(a.DecidedByEmail),
		Comment: a.Comment, ExecutedAt: optTime(a.ExecutedAt),
		URL: s.cfg.BaseURL.String() + paths.Approval(orgOf(c).Slug, workspaceOf(c).Slug, a.ID)}
}

// apiApprovalFilter reads ?status= and ?limit=.
func apiApprovalFilter(q url.Values) (approvals.Status, int, error) {
	problems := validation.Errors{}
	st, err := approvalStatus(q.Get("status"))
	var fields validation.Errors
	if errors.As(err, &fields) {
		problems.Add("status", fields["status"])
	}
	limit := pageLimit(q, problems, approvalsDefaultLimit, approvalsMaxLimit)
	return st, limit, problems.Err()
}

func (s *Server) apiApprovals(c echo.Context) error {
	st, limit, err := apiApprovalFilter(c.QueryParams())
	if err != nil {
		return err
	}
	found, err := s.approvals.List(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, st, limit)
	if err != nil {
		return err
	}
	out := make([]approvalJSON, 0, len(found))
	for _, a := range found {
		out = append(out, s.toApprovalJSON(c, a))
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiApproval(c echo.Context) error {
	a, err := s.approvalOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.toApprovalJSON(c, a))
}

// decisionInput is the body of approve and deny; it may be empty.
type decisionInput struct {
	Comment string `json:"comment"`
}

func (s *Server) apiDecideApproval(approve bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		var in decisionInput
		if c.Request().ContentLength != 0 {
			if err := decodeJSON(c, &in); err != nil {
				return err
			}
		}
		a, err := s.approvals.Decide(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, c.Param("id"), decider(c), approve, in.Comment)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, s.toApprovalJSON(c, a))
	}
}

// approverJSON is one approver in the API.
type approverJSON struct {
	UserID  int64   `json:"user_id"`
	Email   string  `json:"email"`
	Name    string  `json:"name"`
	Role    string  `json:"role"`
	AddedBy *string `json:"added_by"`
	AddedAt string  `json:"added_at"`
}

func (s *Server) apiApprovers(c echo.Context) error {
	found, err := s.store.Approvers(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID)
	if err != nil {
		return err
	}
	out := make([]approverJSON, 0, len(found))
	for _, a := range found {
		out = append(out, approverJSON{UserID: a.UserID, Email: a.Email, Name: a.Name, Role: a.Role,
			AddedBy: a.AddedBy, AddedAt: a.CreatedAt.UTC().Format(timeFormat)})
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiAddApprover(c echo.Context) error {
	if err := s.grantApprover(c, c.Param("user")); err != nil {
		return err
	}
	return s.apiApprovers(c)
}

func (s *Server) apiRemoveApprover(c echo.Context) error {
	id, err := pathID(c, "user")
	if err != nil {
		return err
	}
	if err := s.store.RemoveApprover(c.Request().Context(), orgOf(c).ID, workspaceOf(c).ID, id, actorID(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// pendingApprovals counts the workspace's requests waiting for a decision,
// for the sidebar's badge.
func (s *Server) pendingApprovals(ctx context.Context, orgID, wsID int64) (int, error) {
	if s.approvals == nil {
		return 0, nil // a server built without approvals (some tests) shows no badge
	}
	return s.approvals.PendingCount(ctx, orgID, wsID)
}
