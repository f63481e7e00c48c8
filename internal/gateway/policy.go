package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/sources"
)

// Policies loads the compiled rules that bind one workspace: its
// organization's and its own (policy.Service does).
type Policies interface {
	Set(ctx context.Context, orgID, workspaceID int64) (*policy.Set, error)
}

// policyEntry is a workspace's compiled rules at one pair of versions.
type policyEntry struct {
	orgVersion, workspaceVersion int64
	set                          *policy.Set
}

// noRules is the rule set of a gateway without Policies: every tool's
// default applies.
var noRules = policy.Compile(nil)

// rules returns the compiled rules of a workspace at the given versions,
// which the caller read with the tool (a call) or just before (a listing).
// Every policy write bumps a version, so a cached set is reused exactly
// while both versions stay the same; a set loaded after the versions were
// read is at least as new as they are.
func (g *Gateway) rules(ctx context.Context, orgID, workspaceID, orgVersion, workspaceVersion int64) (*policy.Set, error) {
	if g.opts.Policies == nil {
		return noRules, nil
	}
	key := [2]int64{orgID, workspaceID}
	if e, ok := g.policies.get(key); ok && e.orgVersion == orgVersion && e.workspaceVersion == workspaceVersion {
		return e.set, nil
	}
	want := policyEntry{orgVersion: orgVersion, workspaceVersion: workspaceVersion}
	// Calls that miss together share one load: a cold cache under load
	// costs one query, not one per call.
	g.policyLoads.mu.Lock()
	l := g.policyLoads.running[key]
	if l == nil || l.orgVersion < orgVersion || l.workspaceVersion < workspaceVersion {
		l = &policyLoad{policyEntry: want, done: make(chan struct{})}
		g.policyLoads.running[key] = l
		g.policyLoads.mu.Unlock()
		// Others wait on this load: it outlives this call's cancellation.
		shared, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		set, err := g.opts.Policies.Set(shared, orgID, workspaceID)
		cancel()
		if err == nil {
			g.policies.put(key, &policyEntry{orgVersion: orgVersion, workspaceVersion: workspaceVersion, set: set})
		}
		l.set, l.err = set, err
		g.policyLoads.mu.Lock()
		if g.policyLoads.running[key] == l {
			delete(g.policyLoads.running, key)
		}
		g.policyLoads.mu.Unlock()
		close(l.done)
	} else {
		g.policyLoads.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if l.err != nil {
		return nil, fmt.Errorf("load policies: %w", l.err)
	}
	return l.set, nil
}

// policyLoad is one load of a workspace's rules, shared by the calls that
// need it; it is read at least at the versions of its policyEntry.
type policyLoad struct {
	policyEntry
	done chan struct{}
	err  error
}

// policyLoads are the loads running now, by workspace.
type policyLoads struct {
	mu      sync.Mutex
	running map[[2]int64]*policyLoad
}

// workspaceRules is rules for a listing: one small query for the versions.
func (g *Gateway) workspaceRules(ctx context.Context, c Caller) (*policy.Set, error) {
	if g.opts.Policies == nil {
		return noRules, nil
	}
	orgV, wsV, err := g.opts.Store.PolicyVersions(ctx, c.OrgID, c.WorkspaceID)
	if err != nil {
		return nil, fmt.Errorf("read policy versions: %w", err)
	}
	return g.rules(ctx, c.OrgID, c.WorkspaceID, orgV, wsV)
}

// policyCaller is what rules see of c.
func (c Caller) policyCaller() policy.Caller {
	pc := policy.Caller{UserID: c.UserID, UserEmail: c.UserEmail, Role: c.Role, KeyName: c.KeyName}
	if c.KeyID != nil {
		pc.KeyID = *c.KeyID
	}
	return pc
}

// policyTool is what rules see of a tool. method is the OpenAPI
// operation's; GraphQL tools are POSTs and MCP tools have none.
func policyTool(path, sourceID, sourceName, typ, method string, annotations map[string]any, defaultApproval string, override *string) policy.Tool {
	t := policy.Tool{Path: path, Namespace: path, SourceID: sourceID, Source: sourceName, Type: typ, Method: method,
		Annotations: annotations, DefaultApproval: defaultApproval}
	if i := strings.IndexByte(path, '.'); i >= 0 {
		t.Namespace = path[:i]
	}
	switch sources.Type(typ) {
	case sources.TypeGraphQL:
		t.Method = "POST"
	case sources.TypeMCP:
		t.Method = ""
	}
	if override != nil {
		t.ApprovalOverride = *override
	}
	if t.Annotations == nil {
		t.Annotations = map[string]any{}
	}
	return t
}

// annotationsOf decodes a tool's stored annotations; anything but an
// object is none.
func annotationsOf(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	if db.Present(raw) {
		_ = json.Unmarshal(raw, &m)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// listedPolicyTool is policyTool of a listed tool.
func listedPolicyTool(t db.ListedTool) policy.Tool {
	return policyTool(t.Path, t.SourceID, t.SourceName, t.SourceType, t.Method, annotationsOf(t.Annotations), t.DefaultApproval, t.SourceApprovalOverride)
}

// callPolicyTool is policyTool of the tool a call resolved.
func callPolicyTool(t *db.CallTool, tp *toolPlan) policy.Tool {
	return policyTool(t.Path, t.SourceID, t.SourceName, t.SourceType, tp.openapi.Method, tp.annotations, t.DefaultApproval, t.SourceApprovalOverride)
}

// policyArgs is a call's arguments as rules see them: numbers as float64
// (the gateway decodes them exactly, as json.Number), the rest as decoded.
func policyArgs(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = policyArgs(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = policyArgs(e)
		}
		return out
	}
	return v
}

// decide evaluates the workspace's rules on a call.
func (g *Gateway) decide(ctx context.Context, c Caller, t *db.CallTool, tp *toolPlan, args map[string]any) (policy.Decision, error) {
	set, err := g.rules(ctx, c.OrgID, c.WorkspaceID, t.OrgPolicyVersion, t.WorkspacePolicyVersion)
	if err != nil {
		return policy.Decision{}, err
	}
	var pargs map[string]any
	if set.ReadsArgs() {
		pargs, _ = policyArgs(args).(map[string]any)
	}
	return set.Decide(callPolicyTool(t, tp), c.policyCaller(), pargs, time.Now()), nil
}

// deniedText is what a caller reads when a policy refuses a call.
func deniedText(path string, d policy.Decision) string {
	return fmt.Sprintf("toolgate refused this call to %s: %s", path, d.Reason)
}

// Visibility says which tools a caller may see: those its rules would not
// deny whatever the arguments. It is evaluated in memory, with one rule
// set for a whole listing.
type Visibility struct {
	set    *policy.Set
	caller policy.Caller
	now    time.Time
}

// Visibility loads the rules that bind c's workspace for a listing.
func (g *Gateway) Visibility(ctx context.Context, c Caller) (Visibility, error) {
	set, err := g.workspaceRules(ctx, c)
	if err != nil {
		return Visibility{}, err
	}
	return Visibility{set: set, caller: c.policyCaller(), now: time.Now()}, nil
}

// Hidden reports whether the caller may not see t.
func (v Visibility) Hidden(t Tool) bool {
	if v.set == nil {
		return false
	}
	return v.set.Hidden(t.policyTool(), v.caller, v.now)
}

// Decision is the caller's effective decision on t with no arguments
// known, for describe_tool: what a call would meet unless a rule's
// condition on the arguments says otherwise.
func (v Visibility) Decision(t Tool) policy.Decision {
	if v.set == nil {
		return policy.Decision{Effect: policy.Allow}
	}
	return v.set.Decide(t.policyTool(), v.caller, map[string]any{}, v.now)
}

// policyTool is what rules see of a listed tool.
func (t Tool) policyTool() policy.Tool {
	return policyTool(t.Path, t.SourceID, t.SourceName, t.SourceType, t.Method, t.annotations, t.DefaultApproval, t.approvalOverride)
}
