package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/paths"
	views "github.com/toolgate/toolgate/views/policies"
	"github.com/toolgate/toolgate/views/ui"
)

// policyRoutes are the console's policy pages of an organization and of a
// workspace: everyone in the organization reads the rules and simulates;
// owners and admins change them.
func (s *Server) policyRoutes(org, ws *echo.Group) {
	for _, g := range []*echo.Group{org, ws} {
		g.GET("", s.policiesPage)
		g.POST("/simulate", s.simulatePolicies)
		g.GET("/new", s.newPolicyPage, requireRole(auth.Admin))
		g.POST("", s.createPolicy, requireRole(auth.Admin))
		g.POST("/check", s.checkCondition, requireRole(auth.Admin))
		g.GET("/:id/edit", s.editPolicyPage, requireRole(auth.Admin))
		g.POST("/:id", s.updatePolicy, requireRole(auth.Admin))
		g.POST("/:id/move", s.movePolicy, requireRole(auth.Admin))
		g.POST("/:id/enabled", s.setPolicyEnabled, requireRole(auth.Admin))
		g.POST("/:id/delete", s.deletePolicy, requireRole(auth.Admin))
	}
}

// apiPolicyRoutes are the policy API of an organization and of a workspace.
func (s *Server) apiPolicyRoutes(org, ws *echo.Group) {
	for _, g := range []*echo.Group{org, ws} {
		g.GET("", s.apiPolicies)
		g.POST("", s.apiCreatePolicy, requireRole(auth.Admin))
		g.POST("/simulate", s.apiSimulatePolicies)
		g.GET("/:id", s.apiPolicy)
		g.PATCH("/:id", s.apiUpdatePolicy, requireRole(auth.Admin))
		g.DELETE("/:id", s.apiDeletePolicy, requireRole(auth.Admin))
		g.POST("/:id/move", s.apiMovePolicy, requireRole(auth.Admin))
	}
}

// policies is the rule service over the store.
func (s *Server) policies() *policy.Service { return &policy.Service{Store: s.store} }

// policyPlace is where the route's rules live: its workspace, or the organization.
func policyPlace(c echo.Context) policy.Place {
	return policy.Place{OrgID: orgOf(c).ID, WorkspaceID: workspaceIDOf(c)}
}

// policiesURL is the route's list of rules.
func policiesURL(c echo.Context) string {
	if w := workspaceOf(c); w.ID != 0 {
		return paths.WorkspacePolicies(orgOf(c).Slug, w.Slug)
	}
	return paths.OrgPolicies(orgOf(c).Slug)
}

// ruleURL is a stored rule's base URL in the route's organization, seen
// from workspace wsSlug for a workspace rule.
func ruleURL(orgSlug, wsSlug string, p db.Policy) string {
	if p.WorkspaceID == nil {
		return paths.OrgPolicies(orgSlug) + "/" + strconv.FormatInt(p.ID, 10)
	}
	return paths.WorkspacePolicies(orgSlug, wsSlug) + "/" + strconv.FormatInt(p.ID, 10)
}

// ruleAnchor links to a rule's row in its list.
func ruleAnchor(orgSlug, wsSlug string, p db.Policy) string {
	list := paths.OrgPolicies(orgSlug)
	if p.WorkspaceID != nil {
		list = paths.WorkspacePolicies(orgSlug, wsSlug)
	}
	return list + "#" + views.RowID(strconv.FormatInt(p.ID, 10))
}

// ---- Console: the list ----

func (s *Server) policiesPage(c echo.Context) error {
	return s.renderPolicies(c, http.StatusOK, views.Simulator{Arguments: "{}"})
}

// renderPolicies renders the page with the simulator's state sim.
func (s *Server) renderPolicies(c echo.Context, status int, sim views.Simulator) error {
	org, w := orgOf(c), workspaceOf(c)
	title := "Organization policies"
	section := "org-policies"
	lead := "Rules that allow, hold for approval or deny tool calls in every workspace of " + org.Name + ". The first enabled rule that matches decides."
	if w.ID != 0 {
		title, section = "Policies", "policies"
		lead = "Rules for tool calls in " + w.Name + ". The organization's rules come first; this workspace's can make a decision stricter, never looser."
	}
	m, err := s.meta(c, title, section)
	if err != nil {
		return err
	}
	p := views.ListPage{Meta: m, Title: title, Lead: lead}
	if roleOf(c).AtLeast(auth.Admin) {
		p.NewURL = policiesURL(c) + "/new"
	}
	own, err := s.policyLevel(c, policyPlace(c))
	if err != nil {
		return err
	}
	p.Own = own
	if w.ID != 0 {
		inherited, err := s.policyLevel(c, policy.Place{OrgID: org.ID})
		if err != nil {
			return err
		}
		p.Inherited = &inherited
		if len(inherited.Rows) > 0 && len(own.Rows) == 0 {
			p.Own.EmptyText = "No rules yet: calls follow the organization's rules above, then each tool's default."
		}
	}
	if err := s.fillSimulator(c, &sim); err != nil {
		return err
	}
	p.Simulator = sim
	return render(c, status, views.List(p))
}

// policyLevel builds the rules of a place as the route shows them: the
// route's own level editable by owners and admins, the organization's
// read-only on a workspace's page.
func (s *Server) policyLevel(c echo.Context, at policy.Place) (views.Level, error) {
	org, w := orgOf(c), workspaceOf(c)
	rows, err := s.policies().List(c.Request().Context(), at)
	if err != nil {
		return views.Level{}, err
	}
	l := views.Level{Name: string(at.Level()), CSRF: csrfToken(c),
		EmptyText: "No rules yet: every tool follows its default — calls are allowed, except tools that ask for approval (write operations, or a source set to always require it)."}
	inherited := at.WorkspaceID == nil && w.ID != 0
	switch {
	case inherited:
		l.Title = "Organization rules — bind every workspace"
		l.Lead = "Evaluated first. This workspace's rules below can make their decisions stricter, never looser."
		l.ManageURL = paths.OrgPolicies(org.Slug)
		l.EmptyText = "No organization rules."
	case at.WorkspaceID == nil:
		l.Title = "Organization rules"
		l.Lead = "They bind every workspace: a workspace's own rules can make a decision stricter, never looser."
	default:
		l.Title = "Workspace rules"
		l.Lead = "Evaluated after the organization's, for calls in " + w.Name + "."
	}
	l.Editable = !inherited && roleOf(c).AtLeast(auth.Admin)
	for i, p := range rows {
		l.Rows = append(l.Rows, ruleRow(org.Slug, w.Slug, p, i == 0, i == len(rows)-1))
	}
	return l, nil
}

// ruleRow is a stored rule as a row of the list.
func ruleRow(orgSlug, wsSlug string, p db.Policy, first, last bool) views.Row {
	r := views.Row{ID: strconv.FormatInt(p.ID, 10), Position: p.Position, Effect: p.Effect, Target: targetLabel(p),
		Selector: selectorLabel(p), Condition: p.Condition, Note: p.Note, Enabled: p.Enabled, First: first, Last: last,
		URL: ruleURL(orgSlug, wsSlug, p)}
	if p.Effect == string(policy.RequireApproval) {
		r.Approval = "Expires after " + minutesLabel(p.ApprovalTTLSeconds/60)
		if p.AllowSelfApproval {
			r.Approval += " · self-approval allowed"
		}
	}
	switch {
	case p.TargetType == string(policy.TargetUser) && p.TargetUserEmail == nil:
		r.Dangling = "Its user no longer exists: the rule matches nobody."
	case p.SelectorType == string(policy.SelectSource) && p.SourceName == nil:
		r.Dangling = "Its source was deleted: the rule matches no tool."
	}
	return r
}

// targetLabel says whom a rule targets.
func targetLabel(p db.Policy) string {
	switch p.TargetType {
	case "role":
		return "Role " + deref(p.TargetRole)
	case "user":
		if p.TargetUserEmail != nil {
			return "Member " + *p.TargetUserEmail
		}
		return "A deleted user"
	case "key":
		if p.TargetKeyName != nil {
			return "API key " + *p.TargetKeyName
		}
		return "A deleted API key"
	}
	return "Everyone"
}

// selectorLabel says which tools a rule selects.
func selectorLabel(p db.Policy) string {
	switch p.SelectorType {
	case "source":
		if p.SourceName != nil {
			return "Source " + *p.SourceName
		}
		return "Deleted source " + p.Selector
	case "namespace":
		return "Namespace " + p.Selector
	case "pattern":
		return "Pattern " + p.Selector
	}
	return "All tools"
}

// minutesLabel writes a duration in minutes in the largest whole unit.
func minutesLabel(m int) string {
	switch {
	case m >= 1440 && m%1440 == 0:
		return plural(m/1440, "day")
	case m >= 60 && m%60 == 0:
		return plural(m/60, "hour")
	}
	return plural(m, "minute")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// renderRules answers a change made from the list: htmx gets the level's
// rules to swap in place, a browser a redirect back to the list.
func (s *Server) renderRules(c echo.Context, flash string) error {
	if !isHTMX(c) {
		s.flash(c, "success", flash)
		return s.seeOther(c, policiesURL(c))
	}
	l, err := s.policyLevel(c, policyPlace(c))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.Rules(l))
}

func (s *Server) movePolicy(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	p, err := s.policies().Move(c.Request().Context(), policyPlace(c), actorID(c), id, c.FormValue("direction"))
	if err != nil {
		return err
	}
	return s.renderRules(c, "Rule moved to position "+strconv.Itoa(p.Position)+".")
}

func (s *Server) setPolicyEnabled(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	p, err := s.policies().SetEnabled(c.Request().Context(), policyPlace(c), actorID(c), id, c.FormValue("enabled") == "true")
	if err != nil {
		return err
	}
	if p.Enabled {
		return s.renderRules(c, "Rule "+strconv.Itoa(p.Position)+" enabled.")
	}
	return s.renderRules(c, "Rule "+strconv.Itoa(p.Position)+" disabled: it is skipped until enabled again.")
}

func (s *Server) deletePolicy(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.policies().Delete(c.Request().Context(), policyPlace(c), actorID(c), id); err != nil {
		return err
	}
	return s.renderRules(c, "Rule deleted.")
}

// ---- Console: the editor ----

func (s *Server) newPolicyPage(c echo.Context) error {
	f := views.Form{TargetType: "everyone", TargetRole: "member", SelectorType: "all", Effect: "require_approval",
		ApprovalTTLMinutes: strconv.Itoa(policy.DefaultApprovalTTLMinutes), Enabled: true}
	return s.renderPolicyForm(c, http.StatusOK, f)
}

func (s *Server) editPolicyPage(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	p, err := s.policies().Get(c.Request().Context(), policyPlace(c), id)
	if err != nil {
		return err
	}
	f := formOfRule(policy.InputOf(p))
	f.Editing = true
	return s.renderPolicyForm(c, http.StatusOK, f)
}

// formOfRule is a stored rule in the editor.
func formOfRule(in policy.Input) views.Form {
	f := views.Form{TargetType: string(in.TargetType), TargetRole: in.TargetRole, SelectorType: string(in.SelectorType),
		Condition: in.Condition, Effect: string(in.Effect), ApprovalTTLMinutes: strconv.Itoa(in.ApprovalTTLMinutes),
		AllowSelfApproval: in.AllowSelfApproval, Enabled: in.Enabled == nil || *in.Enabled, Note: in.Note}
	if in.TargetUserID != 0 {
		f.TargetUserID = strconv.FormatInt(in.TargetUserID, 10)
	}
	if in.TargetKeyID != 0 {
		f.TargetKeyID = strconv.FormatInt(in.TargetKeyID, 10)
	}
	switch in.SelectorType {
	case policy.SelectSource:
		f.SelectorSource = in.Selector
	case policy.SelectNamespace:
		f.SelectorNamespace = in.Selector
	case policy.SelectPattern:
		f.SelectorPattern = in.Selector
	}
	if f.TargetRole == "" {
		f.TargetRole = "member"
	}
	return f
}

// policyForm reads the editor: the form's state as typed, and the input
// it means. Numbers that do not parse become values validation refuses.
func policyForm(c echo.Context) (views.Form, policy.Input) {
	f := views.Form{TargetType: c.FormValue("target_type"), TargetRole: c.FormValue("target_role"),
		TargetUserID: c.FormValue("target_user_id"), TargetKeyID: c.FormValue("target_key_id"),
		SelectorType: c.FormValue("selector_type"), SelectorSource: c.FormValue("selector_source"),
		SelectorNamespace: c.FormValue("selector_namespace"), SelectorPattern: c.FormValue("selector_pattern"),
		Condition: c.FormValue("condition"), Effect: c.FormValue("effect"), ApprovalTTLMinutes: c.FormValue("approval_ttl_minutes"),
		AllowSelfApproval: c.FormValue("allow_self_approval") == "true", Enabled: c.FormValue("enabled") == "true",
		Note: c.FormValue("note")}
	in := policy.Input{TargetType: policy.TargetType(f.TargetType), TargetRole: f.TargetRole,
		TargetUserID: formID(f.TargetUserID), TargetKeyID: formID(f.TargetKeyID),
		SelectorType: policy.SelectorType(f.SelectorType), Condition: f.Condition, Effect: policy.Effect(f.Effect),
		AllowSelfApproval: f.AllowSelfApproval, Enabled: &f.Enabled, Note: f.Note}
	switch in.SelectorType {
	case policy.SelectSource:
		in.Selector = f.SelectorSource
	case policy.SelectNamespace:
		in.Selector = f.SelectorNamespace
	case policy.SelectPattern:
		in.Selector = f.SelectorPattern
	}
	if ttl := strings.TrimSpace(f.ApprovalTTLMinutes); ttl != "" {
		n, err := strconv.Atoi(ttl)
		if err != nil || n < 1 {
			n = -1
		}
		in.ApprovalTTLMinutes = n
	}
	return f, in
}

// formID parses an id from a select; empty is 0, anything else bad is -1.
func formID(v string) int64 {
	if strings.TrimSpace(v) == "" {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return -1
	}
	return n
}

// renderPolicyForm renders the editor page, or for htmx the form alone.
func (s *Server) renderPolicyForm(c echo.Context, status int, f views.Form) error {
	ctx := c.Request().Context()
	at := policyPlace(c)
	org, w := orgOf(c), workspaceOf(c)
	title := "New rule"
	f.Action = policiesURL(c)
	if f.Editing {
		title = "Edit rule"
		f.Action = policiesURL(c) + "/" + c.Param("id")
	}
	section := "org-policies"
	f.Where = "An organization rule: it binds every workspace of " + org.Name + ", before their own rules."
	if w.ID != 0 {
		section = "policies"
		f.Where = "A rule of the workspace " + w.Name + ": it applies after the organization's rules and can only make their decisions stricter."
	}
	m, err := s.meta(c, title, section)
	if err != nil {
		return err
	}
	f.CSRF, f.CheckAction, f.CancelURL = m.CSRF, policiesURL(c)+"/check", policiesURL(c)
	f.Check = conditionCheck(f.Condition)
	if err := s.fillRuleChoices(ctx, at, &f); err != nil {
		return err
	}
	if isHTMX(c) {
		return render(c, status, views.FormFragment(f))
	}
	return render(c, status, views.New(views.FormPage{Meta: m, Title: title, ListURL: policiesURL(c), Form: f}))
}

// fillRuleChoices lists the members, API keys and sources a rule of the
// place may point at.
func (s *Server) fillRuleChoices(ctx context.Context, at policy.Place, f *views.Form) error {
	members, err := s.store.Members(ctx, at.OrgID)
	if err != nil {
		return err
	}
	for _, m := range members {
		f.Users = append(f.Users, ui.Option{Value: strconv.FormatInt(m.UserID, 10), Label: m.Email + " (" + m.Role + ")"})
	}
	keys, err := s.keyOptions(ctx, at.OrgID, at.WorkspaceID, "")
	if err != nil {
		return err
	}
	f.Keys = keys
	srcs, err := s.store.Sources(ctx, at.OrgID, db.SourceFilter{WorkspaceID: at.WorkspaceID})
	if err != nil {
		return err
	}
	for _, src := range srcs {
		f.Sources = append(f.Sources, ui.Option{Value: src.ID, Label: src.Name + " (" + src.Slug + ")"})
		f.Namespaces = append(f.Namespaces, src.Slug)
	}
	return nil
}

// keyOptions lists the live API keys of a workspace (or, for nil, of the
// whole organization, named with their workspace). prefix goes before
// each value: the simulator's caller select uses "key:".
func (s *Server) keyOptions(ctx context.Context, orgID int64, workspaceID *int64, prefix string) ([]ui.Option, error) {
	keys, err := s.store.PolicyKeys(ctx, orgID, workspaceID)
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	if workspaceID == nil {
		wss, err := s.store.Workspaces(ctx, orgID)
		if err != nil {
			return nil, err
		}
		for _, w := range wss {
			names[w.ID] = w.Name
		}
	}
	var out []ui.Option
	for _, k := range keys {
		label := k.Name + " (" + k.OwnerEmail + ")"
		if workspaceID == nil {
			label += " · " + names[k.WorkspaceID]
		}
		out = append(out, ui.Option{Value: prefix + strconv.FormatInt(k.ID, 10), Label: label})
	}
	return out, nil
}

// conditionCheck is the editor's check of a condition.
func conditionCheck(src string) views.Check {
	switch {
	case strings.TrimSpace(src) == "":
		return views.Check{Empty: true}
	case len(src) > policy.MaxConditionLen:
		return views.Check{Message: fmt.Sprintf("The condition is %d bytes long; the limit is %d.", len(src), policy.MaxConditionLen)}
	}
	if cerr := policy.CheckCondition(src); cerr != nil {
		return views.NewCheck(src, cerr.Message, cerr.Line, cerr.Column)
	}
	return views.Check{}
}

// checkCondition answers the editor's live check as the condition is typed.
func (s *Server) checkCondition(c echo.Context) error {
	return render(c, http.StatusOK, views.CheckBody(conditionCheck(c.FormValue("condition"))))
}

func (s *Server) createPolicy(c echo.Context) error {
	f, in := policyForm(c)
	p, err := s.policies().Create(c.Request().Context(), policyPlace(c), actorID(c), in)
	if errors.As(err, &f.Errors) {
		return s.renderPolicyForm(c, http.StatusUnprocessableEntity, f)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Rule "+strconv.Itoa(p.Position)+" created: it applies to the next call.")
	return s.seeOther(c, policiesURL(c)+"#"+views.RowID(strconv.FormatInt(p.ID, 10)))
}

func (s *Server) updatePolicy(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	f, in := policyForm(c)
	f.Editing = true
	p, err := s.policies().Update(c.Request().Context(), policyPlace(c), actorID(c), id, in)
	if errors.As(err, &f.Errors) {
		return s.renderPolicyForm(c, http.StatusUnprocessableEntity, f)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Rule "+strconv.Itoa(p.Position)+" saved: it applies to the next call.")
	return s.seeOther(c, policiesURL(c)+"#"+views.RowID(strconv.FormatInt(p.ID, 10)))
}

// ---- Console: the simulator ----

// fillSimulator lists the simulator's choices: the workspaces (on the
// organization's page), the callers and the tool paths of the workspace.
func (s *Server) fillSimulator(c echo.Context, sim *views.Simulator) error {
	ctx := c.Request().Context()
	org, w := orgOf(c), workspaceOf(c)
	sim.CSRF, sim.Action = csrfToken(c), policiesURL(c)+"/simulate"
	var keysOf *int64
	wsID := w.ID
	if w.ID == 0 {
		wss, err := s.store.Workspaces(ctx, org.ID)
		if err != nil {
			return err
		}
		for _, x := range wss {
			sim.Workspaces = append(sim.Workspaces, ui.Option{Value: x.Slug, Label: x.Name})
			if x.Slug == sim.Workspace || wsID == 0 {
				wsID = x.ID
			}
		}
	} else {
		keysOf = &w.ID
	}
	members, err := s.store.Members(ctx, org.ID)
	if err != nil {
		return err
	}
	for _, m := range members {
		sim.Members = append(sim.Members, ui.Option{Value: "user:" + strconv.FormatInt(m.UserID, 10), Label: m.Email + " (" + m.Role + ")"})
	}
	if sim.Keys, err = s.keyOptions(ctx, org.ID, keysOf, "key:"); err != nil {
		return err
	}
	if wsID != 0 {
		if sim.Paths, err = s.store.ToolPaths(ctx, org.ID, wsID); err != nil {
			return err
		}
	}
	return nil
}

// simulatePolicies runs the simulator's form: htmx gets the simulator
// with its result, a browser the whole page.
func (s *Server) simulatePolicies(c echo.Context) error {
	sim := views.Simulator{Workspace: c.FormValue("workspace"), Caller: c.FormValue("caller"), Path: c.FormValue("path"),
		Arguments: c.FormValue("arguments")}
	in := policy.SimulateInput{Path: sim.Path, Arguments: json.RawMessage(sim.Arguments)}
	kind, id, _ := strings.Cut(sim.Caller, ":")
	switch kind {
	case "user":
		in.UserID = formID(id)
	case "key":
		in.KeyID = formID(id)
	}
	w, err := s.simulationWorkspace(c, sim.Workspace)
	var res policy.Simulation
	if err == nil {
		res, err = s.policies().Simulate(c.Request().Context(), orgOf(c).ID, w.ID, in)
	}
	status := http.StatusOK
	if errors.As(err, &sim.Errors) {
		status = http.StatusUnprocessableEntity
		for _, k := range []string{"user_id", "key_id"} {
			if msg, ok := sim.Errors[k]; ok {
				sim.Errors.Add("caller", msg)
			}
		}
	} else if err != nil {
		return err
	} else {
		sim.Result = simulationResult(orgOf(c).Slug, w.Slug, res)
	}
	if !isHTMX(c) {
		return s.renderPolicies(c, status, sim)
	}
	if err := s.fillSimulator(c, &sim); err != nil {
		return err
	}
	return render(c, status, views.SimulatorPanel(sim))
}

// simulationWorkspace is the route's workspace, or on the organization's
// routes the one named by slug.
func (s *Server) simulationWorkspace(c echo.Context, slug string) (db.Workspace, error) {
	if w := workspaceOf(c); w.ID != 0 {
		return w, nil
	}
	if strings.TrimSpace(slug) == "" {
		return db.Workspace{}, validation.Field("workspace", "Choose the workspace to simulate the call in: organization rules apply in each.")
	}
	w, err := s.store.WorkspaceBySlug(c.Request().Context(), orgOf(c).ID, slug)
	if errors.Is(err, db.ErrNotFound) {
		return db.Workspace{}, validation.Field("workspace", "No workspace of this organization has this URL name.")
	}
	return w, err
}

// simulationResult is a simulated decision as the page shows it.
func simulationResult(orgSlug, wsSlug string, sim policy.Simulation) *views.Result {
	d := sim.Decision
	r := &views.Result{Effect: string(d.Effect), Reason: d.Reason, Tool: sim.Tool.Path, Caller: callerLabel(sim.Caller),
		Decider: "the tool's default"}
	if d.Rule != nil {
		if p, ok := sim.Rule(d.Rule.ID); ok {
			r.Decider, r.DeciderURL = ruleName(p), ruleAnchor(orgSlug, wsSlug, p)
		}
	}
	for _, st := range d.Steps {
		row := views.Step{Rule: "rule " + strconv.FormatInt(st.RuleID, 10), Level: string(st.Level), Matched: st.Matched, Why: st.Why}
		if p, ok := sim.Rule(st.RuleID); ok {
			row.Rule, row.RuleURL = ruleName(p), ruleAnchor(orgSlug, wsSlug, p)
		}
		r.Steps = append(r.Steps, row)
	}
	return r
}

// ruleName names a rule by its level, its id (which reasons quote) and
// its position.
func ruleName(p db.Policy) string {
	level := "workspace"
	if p.WorkspaceID == nil {
		level = "organization"
	}
	return fmt.Sprintf("%s rule #%d at position %d", level, p.ID, p.Position)
}

// callerLabel names a simulated caller.
func callerLabel(cl policy.Caller) string {
	if cl.KeyID != 0 {
		return "API key " + cl.KeyName + " of " + cl.UserEmail + " (" + cl.Role + ")"
	}
	return cl.UserEmail + " (" + cl.Role + ")"
}

// ---- JSON API ----

// policyJSON is a rule in the API.
type policyJSON struct {
	ID                 int64   `json:"id"`
	Level              string  `json:"level"`
	Position           int     `json:"position"`
	TargetType         string  `json:"target_type"`
	TargetRole         *string `json:"target_role"`
	TargetUserID       *int64  `json:"target_user_id"`
	TargetKeyID        *int64  `json:"target_key_id"`
	SelectorType       string  `json:"selector_type"`
	Selector           string  `json:"selector"`
	Condition          string  `json:"condition"`
	Effect             string  `json:"effect"`
	Enabled            bool    `json:"enabled"`
	Note               string  `json:"note"`
	ApprovalTTLMinutes int     `json:"approval_ttl_minutes"`
	AllowSelfApproval  bool    `json:"allow_self_approval"`
	CreatedBy          *int64  `json:"created_by"`
	CreatedAt          string  `json:"created_at"`
	UpdatedAt          string  `json:"updated_at"`
}

func toPolicyJSON(p db.Policy) policyJSON {
	level := policy.LevelOrganization
	if p.WorkspaceID != nil {
		level = policy.LevelWorkspace
	}
	return policyJSON{ID: p.ID, Level: string(level), Position: p.Position, TargetType: p.TargetType, TargetRole: p.TargetRole,
		TargetUserID: p.TargetUserID, TargetKeyID: p.TargetKeyID, SelectorType: p.SelectorType, Selector: p.Selector,
		Condition: p.Condition, Effect: p.Effect, Enabled: p.Enabled, Note: p.Note, ApprovalTTLMinutes: p.ApprovalTTLSeconds / 60,
		AllowSelfApproval: p.AllowSelfApproval, CreatedBy: p.CreatedBy,
		CreatedAt: p.CreatedAt.UTC().Format(timeFormat), UpdatedAt: p.UpdatedAt.UTC().Format(timeFormat)}
}

func (s *Server) apiPolicies(c echo.Context) error {
	rows, err := s.policies().List(c.Request().Context(), policyPlace(c))
	if err != nil {
		return err
	}
	out := make([]policyJSON, 0, len(rows))
	for _, p := range rows {
		out = append(out, toPolicyJSON(p))
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiPolicy(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	p, err := s.policies().Get(c.Request().Context(), policyPlace(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toPolicyJSON(p))
}

func (s *Server) apiCreatePolicy(c echo.Context) error {
	var in policy.Input
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	p, err := s.policies().Create(c.Request().Context(), policyPlace(c), actorID(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toPolicyJSON(p))
}

// apiUpdatePolicy changes the fields the body names; the others stay.
func (s *Server) apiUpdatePolicy(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	cur, err := s.policies().Get(ctx, policyPlace(c), id)
	if err != nil {
		return err
	}
	in := policy.InputOf(cur)
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	p, err := s.policies().Update(ctx, policyPlace(c), actorID(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toPolicyJSON(p))
}

func (s *Server) apiDeletePolicy(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.policies().Delete(c.Request().Context(), policyPlace(c), actorID(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiMovePolicy(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	var body struct {
		Direction string `json:"direction"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	p, err := s.policies().Move(c.Request().Context(), policyPlace(c), actorID(c), id, body.Direction)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toPolicyJSON(p))
}

// simulateJSON is the body of a simulation; Workspace (a slug) is read on
// the organization's route only.
type simulateJSON struct {
	policy.SimulateInput
	Workspace string `json:"workspace"`
}

// simulationJSON is a simulated decision in the API.
type simulationJSON struct {
	Effect             string      `json:"effect"`
	Level              string      `json:"level"`
	Rule               *policyJSON `json:"rule"`
	Reason             string      `json:"reason"`
	ApprovalTTLMinutes int         `json:"approval_ttl_minutes"`
	AllowSelfApproval  bool        `json:"allow_self_approval"`
	Steps              []stepJSON  `json:"steps"`
	Tool               struct {
		Path             string `json:"path"`
		Namespace        string `json:"namespace"`
		SourceID         string `json:"source_id"`
		Type             string `json:"type"`
		Method           string `json:"method"`
		DefaultApproval  string `json:"default_approval"`
		ApprovalOverride string `json:"approval_override"`
	} `json:"tool"`
	Caller struct {
		UserID int64  `json:"user_id"`
		User   string `json:"user"`
		Role   string `json:"role"`
		KeyID  int64  `json:"key_id"`
		Key    string `json:"key"`
	} `json:"caller"`
}

// stepJSON is one rule's part in a simulated decision.
type stepJSON struct {
	RuleID  int64  `json:"rule_id"`
	Level   string `json:"level"`
	Matched bool   `json:"matched"`
	Why     string `json:"why"`
}

func (s *Server) apiSimulatePolicies(c echo.Context) error {
	var body simulateJSON
	var err error
	if workspaceOf(c).ID != 0 {
		err = decodeJSON(c, &body.SimulateInput)
	} else {
		err = decodeJSON(c, &body)
	}
	if err != nil {
		return err
	}
	w, err := s.simulationWorkspace(c, body.Workspace)
	if err != nil {
		return err
	}
	sim, err := s.policies().Simulate(c.Request().Context(), orgOf(c).ID, w.ID, body.SimulateInput)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toSimulationJSON(sim))
}

func toSimulationJSON(sim policy.Simulation) simulationJSON {
	d := sim.Decision
	out := simulationJSON{Effect: string(d.Effect), Level: string(d.Level), Reason: d.Reason, Steps: []stepJSON{},
		ApprovalTTLMinutes: int(d.ApprovalTTL().Minutes()), AllowSelfApproval: d.AllowSelfApproval()}
	if d.Rule != nil {
		if p, ok := sim.Rule(d.Rule.ID); ok {
			j := toPolicyJSON(p)
			out.Rule = &j
		}
	}
	for _, st := range d.Steps {
		out.Steps = append(out.Steps, stepJSON{RuleID: st.RuleID, Level: string(st.Level), Matched: st.Matched, Why: st.Why})
	}
	t := sim.Tool
	out.Tool.Path, out.Tool.Namespace, out.Tool.SourceID, out.Tool.Type, out.Tool.Method = t.Path, t.Namespace, t.SourceID, t.Type, t.Method
	out.Tool.DefaultApproval, out.Tool.ApprovalOverride = t.DefaultApproval, t.ApprovalOverride
	cl := sim.Caller
	out.Caller.UserID, out.Caller.User, out.Caller.Role, out.Caller.KeyID, out.Caller.Key = cl.UserID, cl.UserEmail, cl.Role, cl.KeyID, cl.KeyName
	return out
}
