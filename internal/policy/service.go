package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/validation"
)

// Service keeps policy rules: it validates them, stores them through the
// Store (which bumps the level's policy version and notifies other
// replicas on every write), compiles a workspace's rules into a [Set], and
// simulates a call.
type Service struct {
	Store *db.Store
}

// Place is where rules live: an organization (WorkspaceID nil) or one of
// its workspaces.
type Place struct {
	OrgID       int64
	WorkspaceID *int64
}

// Level is the place's level.
func (p Place) Level() Level {
	if p.WorkspaceID == nil {
		return LevelOrganization
	}
	return LevelWorkspace
}

// List returns the place's rules in order.
func (s *Service) List(ctx context.Context, at Place) ([]db.Policy, error) {
	return s.Store.Policies(ctx, at.OrgID, at.WorkspaceID)
}

// Get loads one rule of the place; any other rule is db.ErrNotFound.
func (s *Service) Get(ctx context.Context, at Place, id int64) (db.Policy, error) {
	return s.Store.Policy(ctx, at.OrgID, at.WorkspaceID, id)
}

// Create validates in and adds the rule at the end of the place's order.
func (s *Service) Create(ctx context.Context, at Place, actorID int64, in Input) (db.Policy, error) {
	f, err := s.check(ctx, at, in)
	if err != nil {
		return db.Policy{}, err
	}
	return s.Store.CreatePolicy(ctx, at.OrgID, at.WorkspaceID, actorID, f)
}

// Update validates in and rewrites the rule; its position stays.
func (s *Service) Update(ctx context.Context, at Place, actorID, id int64, in Input) (db.Policy, error) {
	if _, err := s.Get(ctx, at, id); err != nil {
		return db.Policy{}, err
	}
	f, err := s.check(ctx, at, in)
	if err != nil {
		return db.Policy{}, err
	}
	return s.Store.UpdatePolicy(ctx, at.OrgID, at.WorkspaceID, id, actorID, f)
}

// Delete removes the rule.
func (s *Service) Delete(ctx context.Context, at Place, actorID, id int64) error {
	return s.Store.DeletePolicy(ctx, at.OrgID, at.WorkspaceID, id, actorID)
}

// Move moves the rule one place "up" (earlier) or "down" (later).
func (s *Service) Move(ctx context.Context, at Place, actorID, id int64, direction string) (db.Policy, error) {
	if direction != "up" && direction != "down" {
		if _, err := s.Get(ctx, at, id); err != nil {
			return db.Policy{}, err
		}
		return db.Policy{}, validation.Field("direction", "Choose up or down.")
	}
	return s.Store.MovePolicy(ctx, at.OrgID, at.WorkspaceID, id, actorID, direction == "up")
}

// SetEnabled turns the rule on or off.
func (s *Service) SetEnabled(ctx context.Context, at Place, actorID, id int64, enabled bool) (db.Policy, error) {
	return s.Store.SetPolicyEnabled(ctx, at.OrgID, at.WorkspaceID, id, actorID, enabled)
}

// Rules loads every rule a workspace's calls answer to, the
// organization's first, as the engine's rules.
func (s *Service) Rules(ctx context.Context, orgID, workspaceID int64) ([]db.Policy, []Rule, error) {
	rows, err := s.Store.PolicyRules(ctx, orgID, workspaceID)
	if err != nil {
		return nil, nil, fmt.Errorf("load policy rules: %w", err)
	}
	rules := make([]Rule, 0, len(rows))
	for _, p := range rows {
		rules = append(rules, RuleOf(p))
	}
	return rows, rules, nil
}

// Set compiles the rules of a workspace and its organization.
func (s *Service) Set(ctx context.Context, orgID, workspaceID int64) (*Set, error) {
	_, rules, err := s.Rules(ctx, orgID, workspaceID)
	if err != nil {
		return nil, err
	}
	return Compile(rules), nil
}

// RuleOf is a stored rule as the engine's Rule.
func RuleOf(p db.Policy) Rule {
	r := Rule{ID: p.ID, Level: LevelOrganization, Target: TargetType(p.TargetType), Selector: SelectorType(p.SelectorType),
		Value: p.Selector, Condition: p.Condition, Effect: Effect(p.Effect), Position: p.Position, Enabled: p.Enabled,
		Note: p.Note, ApprovalTTL: time.Duration(p.ApprovalTTLSeconds) * time.Second, AllowSelfApproval: p.AllowSelfApproval}
	if p.WorkspaceID != nil {
		r.Level = LevelWorkspace
	}
	if p.TargetRole != nil {
		r.Role = *p.TargetRole
	}
	if p.TargetUserID != nil {
		r.UserID = *p.TargetUserID
	}
	if p.TargetKeyID != nil {
		r.KeyID = *p.TargetKeyID
	}
	return r
}

// ToolOf is what a rule sees of a stored tool: the HTTP method of an
// OpenAPI operation (from its reference), POST for GraphQL, the MCP
// annotations as a map, and the default approval with the source's
// override (nil for none).
func ToolOf(t db.VisibleTool, override *string) Tool {
	out := Tool{Path: t.Path, SourceID: t.SourceID, Source: t.SourceName, Type: t.SourceType,
		DefaultApproval: t.DefaultApproval}
	out.Namespace, _, _ = strings.Cut(t.Path, ".")
	switch t.SourceType {
	case "openapi":
		var ref struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(t.Ref, &ref)
		out.Method = strings.ToUpper(ref.Method)
	case "graphql":
		out.Method = "POST"
	}
	if db.Present(t.Annotations) {
		_ = json.Unmarshal(t.Annotations, &out.Annotations)
	}
	if override != nil {
		out.ApprovalOverride = *override
	}
	return out
}

// SimulateInput is a call to try against a workspace's rules: who calls
// (a member, or an API key acting as its owner), which tool, and with
// which arguments (a JSON object; empty means {}).
type SimulateInput struct {
	UserID    int64           `json:"user_id"`
	KeyID     int64           `json:"key_id"`
	Path      string          `json:"path"`
	Arguments json.RawMessage `json:"arguments"`
}

// Simulation is what a simulated call would meet.
type Simulation struct {
	Decision Decision
	Tool     Tool
	Caller   Caller
	// Rules are the rules evaluated, the organization's first; the
	// decision's steps point into them by id.
	Rules []db.Policy
}

// Rule returns the stored rule with the id, if it was evaluated.
func (sim Simulation) Rule(id int64) (db.Policy, bool) {
	for _, p := range sim.Rules {
		if p.ID == id {
			return p, true
		}
	}
	return db.Policy{}, false
}

// Simulate decides a call in a workspace as the gateway would, now,
// without making it: the caller's role comes from their membership (a
// key's from its owner's), the tool is found by path or alias, and its
// source's approval override applies when no rule matches.
func (s *Service) Simulate(ctx context.Context, orgID, workspaceID int64, in SimulateInput) (Simulation, error) {
	e := validation.Errors{}
	caller, err := s.caller(ctx, orgID, workspaceID, in, e)
	if err != nil {
		return Simulation{}, err
	}
	tool, err := s.tool(ctx, orgID, workspaceID, in.Path, e)
	if err != nil {
		return Simulation{}, err
	}
	args, msg := Arguments(in.Arguments)
	if msg != "" {
		e.Add("arguments", msg)
	}
	if err := e.Err(); err != nil {
		return Simulation{}, err
	}
	rows, rules, err := s.Rules(ctx, orgID, workspaceID)
	if err != nil {
		return Simulation{}, err
	}
	d := Compile(rules).Decide(tool, caller, args, time.Now())
	return Simulation{Decision: d, Tool: tool, Caller: caller, Rules: rows}, nil
}

// Arguments decodes a call's arguments, which must be a JSON object (or
// nothing, meaning {}); msg says what is wrong otherwise.
func Arguments(raw json.RawMessage) (args map[string]any, msg string) {
	text := strings.TrimSpace(string(raw))
	if text == "" || text == "null" {
		return map[string]any{}, ""
	}
	if err := json.Unmarshal([]byte(text), &args); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			line, col := lineColumn(text, int(syntax.Offset))
			return nil, fmt.Sprintf("Enter a JSON object: line %d, column %d: %s.", line, col, syntax.Error())
		}
		return nil, "Enter a JSON object, like {\"amount\": 100}: " + err.Error() + "."
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, ""
}

// lineColumn turns a byte offset into a 1-based line and column.
func lineColumn(s string, off int) (line, col int) {
	off = min(max(off, 0), len(s))
	before := s[:off]
	line = strings.Count(before, "\n") + 1
	col = len([]rune(before[strings.LastIndexByte(before, '\n')+1:]))
	return line, max(col, 1)
}

// caller resolves who simulates: exactly one of a member and an API key
// of the workspace.
func (s *Service) caller(ctx context.Context, orgID, workspaceID int64, in SimulateInput, e validation.Errors) (Caller, error) {
	switch {
	case in.UserID != 0 && in.KeyID != 0:
		e.Add("key_id", "Give user_id or key_id, not both.")
		return Caller{}, nil
	case in.KeyID != 0:
		k, err := s.Store.APIKeyByID(ctx, orgID, workspaceID, in.KeyID)
		if errors.Is(err, db.ErrNotFound) {
			e.Add("key_id", "Choose a live API key of this workspace.")
			return Caller{}, nil
		} else if err != nil {
			return Caller{}, err
		}
		m, err := s.Store.Member(ctx, orgID, k.UserID)
		if errors.Is(err, db.ErrNotFound) {
			e.Add("key_id", "This key's owner is no longer a member, so the key does not work.")
			return Caller{}, nil
		} else if err != nil {
			return Caller{}, err
		}
		return Caller{UserID: m.UserID, UserEmail: m.Email, Role: m.Role, KeyID: k.ID, KeyName: k.Name}, nil
	case in.UserID != 0:
		m, err := s.Store.Member(ctx, orgID, in.UserID)
		if errors.Is(err, db.ErrNotFound) {
			e.Add("user_id", "Choose a member of this organization.")
			return Caller{}, nil
		} else if err != nil {
			return Caller{}, err
		}
		return Caller{UserID: m.UserID, UserEmail: m.Email, Role: m.Role}, nil
	}
	e.Add("user_id", "Choose who calls: a member (user_id) or an API key (key_id).")
	return Caller{}, nil
}

// tool finds the tool a workspace sees by path or alias, with its
// source's approval override.
func (s *Service) tool(ctx context.Context, orgID, workspaceID int64, path string, e validation.Errors) (Tool, error) {
	path = strings.TrimSpace(path)
	if path == "" {
		e.Add("path", "Enter a tool path, like github.repos.get.")
		return Tool{}, nil
	}
	t, err := s.Store.ToolByPath(ctx, orgID, workspaceID, path)
	if errors.Is(err, db.ErrNotFound) {
		e.Add("path", "No tool of this workspace has this path or alias.")
		return Tool{}, nil
	} else if err != nil {
		return Tool{}, err
	}
	src, err := s.Store.Source(ctx, orgID, t.SourceID)
	if err != nil {
		return Tool{}, fmt.Errorf("load source %s: %w", t.SourceID, err)
	}
	return ToolOf(t, src.ApprovalOverride), nil
}
