package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Set is a compiled list of rules, ready to decide calls. Build it with
// [Compile] whenever rules change; it is immutable and safe for concurrent
// use. A nil *Set has no rules.
type Set struct {
	org []compiled // LevelOrganization, in evaluation order
	ws  []compiled // LevelWorkspace, in evaluation order
	// readsArgs: a condition reads the call's arguments.
	readsArgs bool
}

// compiled is one rule with its condition compiled and the sentences that
// explain it written once, so that evaluating a call formats nothing.
type compiled struct {
	rule Rule
	cond *condition
	// broken says why the target or selector cannot be evaluated; the
	// rule then matches every call if its effect is stricter than allow.
	broken string
	// condBroken says why the condition does not compile; the rule then
	// matches every call its target and selector match, if its effect is
	// stricter than allow.
	condBroken string

	label       string // "rule #12 of the organization (deny github.**)"
	short       string // "rule #12 (deny github.**)"
	matched     string // "Rule #12 of the organization (deny github.**) matched: args.x > 1"
	sentence    string // matched + "."
	whyTarget   string
	whySelector string
	whyFalse    string
	whyMatched  string
	whyBroken   string
}

// Compile builds a Set from the rules of both levels (each rule's Level
// says which; a rule with any other level is treated as an organization
// rule, the binding one). Disabled rules are left out; each level is
// ordered by Position, then ID. Conditions are compiled once here, with a
// cost limit on their evaluation.
//
// Compile never fails. A rule that cannot be evaluated as written (its
// condition no longer compiles, its pattern is invalid, its target or
// selector is unknown) is kept and fails closed: it matches when its
// effect is stricter than allow, and an allow rule does not match. A rule
// whose effect is not one of the three is treated as deny. The reason
// appears in the rule's [Step.Why].
func Compile(rules []Rule) *Set {
	s := &Set{}
	for _, r := range rules {
		if !r.Enabled {
			continue
		}
		c := compile(r)
		s.readsArgs = s.readsArgs || c.cond != nil && c.cond.uses.args
		if r.Level == LevelWorkspace {
			s.ws = append(s.ws, c)
		} else {
			s.org = append(s.org, c)
		}
	}
	order := func(a, b compiled) int {
		return cmp.Or(cmp.Compare(a.rule.Position, b.rule.Position), cmp.Compare(a.rule.ID, b.rule.ID))
	}
	slices.SortFunc(s.org, order)
	slices.SortFunc(s.ws, order)
	return s
}

// Len is the number of enabled rules in the set.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.org) + len(s.ws)
}

// ReadsArgs reports whether a rule's condition reads the call's arguments:
// when none does, [Set.Decide] may be given nil for them, and the caller
// spares itself converting them.
func (s *Set) ReadsArgs() bool { return s != nil && s.readsArgs }

func compile(r Rule) compiled {
	c := compiled{rule: r}
	var effectNote string
	if !r.Effect.Valid() {
		effectNote = fmt.Sprintf("; its effect %q is not allow, require_approval or deny, so it counts as deny", r.Effect)
		c.rule.Effect = Deny
	}
	if r.Level != LevelWorkspace {
		c.rule.Level = LevelOrganization
	}
	c.broken = checkTargetSelector(r)
	if r.Condition != "" {
		cond, err := newCondition(r.Condition)
		if err != nil {
			c.condBroken = "its condition does not compile (" + err.Error() + ")"
		}
		c.cond = cond
	}

	id := "rule #" + strconv.FormatInt(r.ID, 10)
	c.label = id + " of the " + levelNoun(c.rule.Level) + " (" + describe(c.rule) + ")"
	c.short = id + " (" + describe(c.rule) + ")"
	c.whyTarget = "targets " + targetText(r) + ", not this caller"
	c.whySelector = "selects " + selectionText(r) + ", not this tool"
	c.whyFalse = "condition is false"
	c.whyMatched = "matched" + effectNote
	if r.Condition != "" {
		c.whyMatched = "matched: the condition is true" + effectNote
	}
	if problem := cmp.Or(c.broken, c.condBroken); problem != "" {
		c.whyBroken = problem + failClosedText(c.rule.Effect) + effectNote
	}
	c.matched = matchedText(&c, nil)
	c.sentence = c.matched + "."
	return c
}

// checkTargetSelector says why a rule's target or selector cannot be
// evaluated, or "" when they can.
func checkTargetSelector(r Rule) string {
	switch r.Target {
	case TargetEveryone:
	case TargetRole:
		if r.Role == "" {
			return "it targets a role but names none"
		}
	case TargetUser:
		if r.UserID == 0 {
			return "it targets a user but names none"
		}
	case TargetKey:
		if r.KeyID == 0 {
			return "it targets an API key but names none"
		}
	default:
		return fmt.Sprintf("its target %q is unknown", r.Target)
	}
	switch r.Selector {
	case SelectAll:
	case SelectSource, SelectNamespace:
		if r.Value == "" {
			return fmt.Sprintf("it selects a %s but names none", r.Selector)
		}
	case SelectPattern:
		if err := CheckPattern(r.Value); err != nil {
			return "its pattern is invalid (" + err.Error() + ")"
		}
	default:
		return fmt.Sprintf("its selector %q is unknown", r.Selector)
	}
	return ""
}

func failClosedText(e Effect) string {
	if e == Allow {
		return "; it fails closed, so this allow rule does not match"
	}
	return "; it fails closed, so this " + effectNoun(e) + " rule matches"
}

func levelNoun(l Level) string {
	if l == LevelWorkspace {
		return "workspace"
	}
	return "organization"
}

func effectNoun(e Effect) string {
	switch e {
	case Allow:
		return "allow"
	case RequireApproval:
		return "require-approval"
	}
	return "deny"
}

// describe is a rule in a few words: "require approval for stripe.** for role member".
func describe(r Rule) string {
	var verb string
	switch r.Effect {
	case Allow:
		verb = "allow "
	case RequireApproval:
		verb = "require approval for "
	default:
		verb = "deny "
	}
	s := verb + selectionText(r)
	if r.Target != TargetEveryone {
		s += " for " + targetText(r)
	}
	return s
}

func selectionText(r Rule) string {
	switch r.Selector {
	case SelectAll:
		return "all tools"
	case SelectSource:
		return "source " + r.Value
	case SelectNamespace:
		return "namespace " + r.Value
	case SelectPattern:
		return r.Value
	}
	return fmt.Sprintf("%s %s", r.Selector, r.Value)
}

func targetText(r Rule) string {
	switch r.Target {
	case TargetEveryone:
		return "everyone"
	case TargetRole:
		return "role " + r.Role
	case TargetUser:
		return "user #" + strconv.FormatInt(r.UserID, 10)
	case TargetKey:
		return "API key #" + strconv.FormatInt(r.KeyID, 10)
	}
	return string(r.Target)
}

// targets reports whether the rule applies to the caller.
func (c *compiled) targets(cl *Caller) bool {
	switch c.rule.Target {
	case TargetEveryone:
		return true
	case TargetRole:
		return cl.Role == c.rule.Role
	case TargetUser:
		return cl.UserID == c.rule.UserID
	case TargetKey:
		return cl.KeyID != 0 && cl.KeyID == c.rule.KeyID
	}
	return false
}

// selects reports whether the rule applies to the tool.
func (c *compiled) selects(t *Tool) bool {
	switch c.rule.Selector {
	case SelectAll:
		return true
	case SelectSource:
		return t.SourceID == c.rule.Value
	case SelectNamespace:
		return t.Namespace == c.rule.Value
	case SelectPattern:
		return matchValid(c.rule.Value, t.Path)
	}
	return false
}

// failClosed is whether a rule that cannot be evaluated matches.
func (c *compiled) failClosed() bool { return c.rule.Effect != Allow }

// match evaluates the rule for one call. condErr is the condition's
// runtime error, if it had one.
func (c *compiled) match(a *activation) (matched bool, why string, condErr error) {
	switch {
	case c.broken != "":
		return c.failClosed(), c.whyBroken, nil
	case !c.targets(&a.caller):
		return false, c.whyTarget, nil
	case !c.selects(&a.tool):
		return false, c.whySelector, nil
	case c.condBroken != "":
		return c.failClosed(), c.whyBroken, nil
	case c.cond == nil:
		return true, c.whyMatched, nil
	}
	ok, err := c.cond.eval(a)
	switch {
	case err != nil:
		return c.failClosed(), "the condition failed (" + err.Error() + ")" + failClosedText(c.rule.Effect), err
	case ok:
		return true, c.whyMatched, nil
	}
	return false, c.whyFalse, nil
}

// DefaultEffect is what applies to a tool no rule matched: the source's
// override when it has one, else the tool's own DefaultApproval; "auto"
// allows and "required" requires approval. Anything else, including an
// empty or unknown value, requires approval: a tool whose default is not
// known fails closed.
func DefaultEffect(t Tool) Effect {
	v := t.DefaultApproval
	if t.ApprovalOverride != "" {
		v = t.ApprovalOverride
	}
	if v == "auto" {
		return Allow
	}
	return RequireApproval
}

// defaultReason says why the default decided; only an unknown default
// needs formatting.
func defaultReason(t *Tool) string {
	v, overridden := t.DefaultApproval, t.ApprovalOverride != ""
	if overridden {
		v = t.ApprovalOverride
	}
	switch {
	case v == "auto" && overridden:
		return "No rule matched; the tool's default is to allow it (its source overrides it)."
	case v == "auto":
		return "No rule matched; the tool's default is to allow it."
	case v == "required" && overridden:
		return "No rule matched; the tool's default is to require approval (its source overrides it)."
	case v == "required":
		return "No rule matched; the tool's default is to require approval."
	case overridden:
		return "No rule matched; the tool's default is to require approval, since its source's override " +
			strconv.Quote(v) + " is not auto or required and so fails closed."
	}
	return "No rule matched; the tool's default is to require approval, since its default approval " +
		strconv.Quote(v) + " is not auto or required and so fails closed."
}

// Decide evaluates a call: the organization's rules first, first match by
// position; then the workspace's. When an organization rule matched, the
// result is the stricter of its effect and the matching workspace rule's,
// and the rule reported is the one that set the result (the organization's
// on a tie). When only a workspace rule matched, it decides, even if it is
// looser than the tool's default. When neither matched, [DefaultEffect]
// applies with Level LevelDefault and a nil Rule. A condition that fails
// at run time (a missing key, the cost limit) fails closed.
//
// Steps lists each rule considered, in order; rules after a level's first
// match are not considered and not listed. Every sentence in the result is
// written once by [Compile], so Decide formats nothing unless a condition
// fails; its cost is evaluating the conditions it reaches plus the Steps
// slice. The returned Rule points into the Set and must not be modified.
func (s *Set) Decide(t Tool, c Caller, args map[string]any, now time.Time) Decision {
	a := &activation{tool: t, caller: c, args: args, now: now}
	var steps []Step
	var org, ws []compiled
	if s != nil {
		org, ws = s.org, s.ws
		steps = make([]Step, 0, len(org)+len(ws))
	}
	oi, oerr, steps := firstMatch(org, a, steps)
	wi, werr, steps := firstMatch(ws, a, steps)

	d := Decision{Steps: steps}
	switch {
	case oi < 0 && wi < 0:
		d.Effect, d.Level, d.Reason = DefaultEffect(t), LevelDefault, defaultReason(&t)
	case oi < 0:
		w := &ws[wi]
		d.Effect, d.Rule, d.Level = w.rule.Effect, &w.rule, LevelWorkspace
		d.Reason = reason(w, werr, "")
	case wi < 0:
		o := &org[oi]
		d.Effect, d.Rule, d.Level = o.rule.Effect, &o.rule, LevelOrganization
		d.Reason = reason(o, oerr, "")
	default:
		o, w := &org[oi], &ws[wi]
		if rank(w.rule.Effect) > rank(o.rule.Effect) {
			d.Effect, d.Rule, d.Level = w.rule.Effect, &w.rule, LevelWorkspace
			d.Reason = reason(w, werr, "; it is stricter than the organization's "+o.short)
		} else {
			d.Effect, d.Rule, d.Level = o.rule.Effect, &o.rule, LevelOrganization
			if w.rule.Effect == o.rule.Effect {
				d.Reason = reason(o, oerr, "; the workspace's "+w.short+" agrees")
			} else {
				d.Reason = reason(o, oerr, "; the workspace's "+w.short+" cannot loosen it")
			}
		}
	}
	return d
}

// firstMatch evaluates one level's rules in order and returns the index of
// the first that matched (-1 for none) and that rule's condition error.
func firstMatch(rules []compiled, a *activation, steps []Step) (int, error, []Step) {
	for i := range rules {
		c := &rules[i]
		ok, why, err := c.match(a)
		if steps != nil {
			steps = append(steps, Step{RuleID: c.rule.ID, Level: c.rule.Level, Matched: ok, Why: why})
		}
		if ok {
			return i, err, steps
		}
	}
	return -1, nil, steps
}

// reason is the sentence saying that c decided, with more appended.
func reason(c *compiled, condErr error, more string) string {
	switch {
	case condErr != nil:
		return matchedText(c, condErr) + more + "."
	case more == "":
		return c.sentence
	}
	return c.matched + more + "."
}

// matchedText is the first half of a reason: "Rule #12 of the
// organization (deny stripe.**) matched: args.amount > 100".
func matchedText(c *compiled, condErr error) string {
	s := "R" + c.label[1:] + " matched"
	switch {
	case c.broken != "" || c.condBroken != "":
		return s + " because " + cmp.Or(c.broken, c.condBroken) + ", which fails closed"
	case condErr != nil:
		// Not the error's text: CEL quotes the values it failed on, and a
		// reason travels to approvals, audit rows and the agent. The
		// simulator's steps, shown to whoever typed the arguments, keep it.
		return s + " because its condition failed at run time, which fails closed"
	case c.rule.Condition != "":
		return s + ": " + c.rule.Condition
	}
	return s
}

// outcome bits: the possible results of one level for Hidden.
const (
	mayAllow uint8 = 1 << iota
	mayRequire
	mayDeny
	mayNone // no rule of the level matches
)

func effectBit(e Effect) uint8 {
	switch e {
	case Allow:
		return mayAllow
	case RequireApproval:
		return mayRequire
	}
	return mayDeny
}

var bitEffects = [...]Effect{Allow, RequireApproval, Deny}

// Hidden reports whether a listing should leave the tool out for this
// caller: true only when a call would be denied whatever its arguments.
// Conditions that read `args` are evaluated with args unknown (CEL partial
// evaluation): one that comes out true or false without them decides as
// usual, and one that depends on them (or fails with them unknown) might
// match or not, so both branches are followed. The tool is hidden only if
// every branch ends in deny.
func (s *Set) Hidden(t Tool, c Caller, now time.Time) bool {
	if s == nil {
		return DefaultEffect(t) == Deny
	}
	a := &activation{tool: t, caller: c, now: now}
	org := possible(s.org, a)
	ws := possible(s.ws, a)
	def := DefaultEffect(t)
	for _, o := range outcomes(org) {
		for _, w := range outcomes(ws) {
			var e Effect
			switch {
			case o == "" && w == "":
				e = def
			case o == "":
				e = w
			default:
				e = o.Stricter(w)
			}
			if e != Deny {
				return false
			}
		}
	}
	return true
}

// outcomes lists the effects in bits, with "" for mayNone.
func outcomes(bits uint8) []Effect {
	out := make([]Effect, 0, 4)
	for i, e := range bitEffects {
		if bits&(1<<i) != 0 {
			out = append(out, e)
		}
	}
	if bits&mayNone != 0 {
		out = append(out, "")
	}
	return out
}

// possible is the set of outcomes of one level's first match when the
// arguments are unknown.
func possible(rules []compiled, a *activation) uint8 {
	var bits uint8
	for i := range rules {
		c := &rules[i]
		bit := effectBit(c.rule.Effect)
		switch c.mayMatch(a) {
		case triTrue:
			return bits | bit
		case triMaybe:
			bits |= bit
		}
	}
	return bits | mayNone
}

// mayMatch is match with the arguments unknown.
func (c *compiled) mayMatch(a *activation) tri {
	closed := triFalse
	if c.failClosed() {
		closed = triTrue
	}
	switch {
	case c.broken != "":
		return closed
	case !c.targets(&a.caller) || !c.selects(&a.tool):
		return triFalse
	case c.condBroken != "":
		return closed
	case c.cond == nil:
		return triTrue
	case c.cond.uses.args:
		return c.cond.evalPartial(a)
	}
	// The condition does not read args: evaluate it as a call would.
	ok, err := c.cond.eval(a)
	switch {
	case err != nil:
		return closed
	case ok:
		return triTrue
	}
	return triFalse
}
