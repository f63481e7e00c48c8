package policy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/validation"
)

// Limits of a rule's fields.
const (
	// MaxApprovalTTLMinutes is the longest a held call may wait: 7 days.
	MaxApprovalTTLMinutes = 7 * 24 * 60
	// DefaultApprovalTTLMinutes is DefaultApprovalTTL in minutes.
	DefaultApprovalTTLMinutes = int(DefaultApprovalTTL / time.Minute)
	// MaxNoteLen is the longest note, in characters.
	MaxNoteLen = 500
)

// Roles a rule may target, strongest first.
var Roles = []string{"owner", "admin", "member", "viewer"}

// namespacePattern is a tool path's first segment: a source's slug, made of
// lowercase letters, digits and hyphens (underscores are allowed too).
var namespacePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Input creates or rewrites a rule; its JSON names are the API's. Of the
// target fields only the one TargetType names is read, and of the selector
// fields Selector holds the source id, the namespace or the pattern.
type Input struct {
	TargetType   TargetType   `json:"target_type"`
	TargetRole   string       `json:"target_role"`
	TargetUserID int64        `json:"target_user_id"`
	TargetKeyID  int64        `json:"target_key_id"`
	SelectorType SelectorType `json:"selector_type"`
	Selector     string       `json:"selector"`
	Condition    string       `json:"condition"`
	Effect       Effect       `json:"effect"`
	// ApprovalTTLMinutes is how long a call the rule holds waits; 0 means
	// DefaultApprovalTTLMinutes.
	ApprovalTTLMinutes int  `json:"approval_ttl_minutes"`
	AllowSelfApproval  bool `json:"allow_self_approval"`
	// Enabled defaults to true when nil.
	Enabled *bool  `json:"enabled"`
	Note    string `json:"note"`
}

// InputOf is a stored rule as an Input, the starting point of an edit.
func InputOf(p db.Policy) Input {
	in := Input{TargetType: TargetType(p.TargetType), SelectorType: SelectorType(p.SelectorType), Selector: p.Selector,
		Condition: p.Condition, Effect: Effect(p.Effect), ApprovalTTLMinutes: p.ApprovalTTLSeconds / 60,
		AllowSelfApproval: p.AllowSelfApproval, Enabled: &p.Enabled, Note: p.Note}
	if p.TargetRole != nil {
		in.TargetRole = *p.TargetRole
	}
	if p.TargetUserID != nil {
		in.TargetUserID = *p.TargetUserID
	}
	if p.TargetKeyID != nil {
		in.TargetKeyID = *p.TargetKeyID
	}
	return in
}

// check validates in for a rule at a place and returns what to store,
// or validation.Errors naming each field that is wrong.
func (s *Service) check(ctx context.Context, at Place, in Input) (db.PolicyFields, error) {
	e := validation.Errors{}
	f := db.PolicyFields{TargetType: string(in.TargetType), SelectorType: string(in.SelectorType),
		Selector: strings.TrimSpace(in.Selector), Effect: string(in.Effect), AllowSelfApproval: in.AllowSelfApproval,
		Enabled: in.Enabled == nil || *in.Enabled, Note: strings.TrimSpace(in.Note)}
	if err := s.checkTarget(ctx, at, in, &f, e); err != nil {
		return f, err
	}
	if err := s.checkSelector(ctx, at, &f, e); err != nil {
		return f, err
	}
	if msg := ConditionMessage(in.Condition); msg != "" {
		e.Add("condition", msg)
	}
	f.Condition = strings.TrimSpace(in.Condition)
	if !in.Effect.Valid() {
		e.Add("effect", "Choose allow, require_approval or deny.")
	}
	ttl := in.ApprovalTTLMinutes
	if ttl == 0 {
		ttl = DefaultApprovalTTLMinutes
	}
	if ttl < 1 || ttl > MaxApprovalTTLMinutes {
		// The expiry only matters to rules that hold calls; the others
		// keep the default rather than fail on a field they do not use.
		if in.Effect == RequireApproval {
			e.Add("approval_ttl_minutes", fmt.Sprintf("Enter a whole number of minutes from 1 to %d (7 days).", MaxApprovalTTLMinutes))
		}
		ttl = DefaultApprovalTTLMinutes
	}
	f.ApprovalTTLSeconds = ttl * 60
	if utf8.RuneCountInString(f.Note) > MaxNoteLen {
		e.Add("note", fmt.Sprintf("Use at most %d characters.", MaxNoteLen))
	}
	return f, e.Err()
}

// ConditionMessage says what is wrong with a condition, with the line and
// column of the problem, or returns "" for a usable (or empty) condition.
func ConditionMessage(src string) string {
	if strings.TrimSpace(src) == "" {
		return ""
	}
	if len(src) > MaxConditionLen {
		return fmt.Sprintf("Use at most %d bytes.", MaxConditionLen)
	}
	if cerr := CheckCondition(src); cerr != nil {
		return fmt.Sprintf("Line %d, column %d: %s", cerr.Line, cerr.Column, cerr.Message)
	}
	return ""
}

// checkTarget validates whom the rule targets: the role must be one of
// the four, the user a member of the organization, the key a live key of
// the workspace (for an organization rule, of any of its workspaces).
func (s *Service) checkTarget(ctx context.Context, at Place, in Input, f *db.PolicyFields, e validation.Errors) error {
	switch in.TargetType {
	case TargetEveryone:
	case TargetRole:
		f.TargetRole = in.TargetRole
		if !validRole(in.TargetRole) {
			e.Add("target_role", "Choose owner, admin, member or viewer.")
		}
	case TargetUser:
		f.TargetUserID = in.TargetUserID
		if in.TargetUserID <= 0 {
			e.Add("target_user_id", "Choose a member of this organization.")
			return nil
		}
		_, err := s.Store.Member(ctx, at.OrgID, in.TargetUserID)
		if errors.Is(err, db.ErrNotFound) {
			e.Add("target_user_id", "Choose a member of this organization: this user is not one.")
			return nil
		}
		return err
	case TargetKey:
		f.TargetKeyID = in.TargetKeyID
		where := "this workspace"
		if at.WorkspaceID == nil {
			where = "this organization"
		}
		if in.TargetKeyID <= 0 {
			e.Add("target_key_id", "Choose an API key of "+where+".")
			return nil
		}
		_, err := s.Store.PolicyKey(ctx, at.OrgID, at.WorkspaceID, in.TargetKeyID)
		if errors.Is(err, db.ErrNotFound) {
			e.Add("target_key_id", "Choose a live API key of "+where+": this one is not.")
			return nil
		}
		return err
	default:
		e.Add("target_type", "Choose everyone, role, user or key.")
	}
	return nil
}

func validRole(r string) bool {
	for _, x := range Roles {
		if r == x {
			return true
		}
	}
	return false
}

// checkSelector validates which tools the rule selects: a source the
// level sees, a namespace, or a path pattern.
func (s *Service) checkSelector(ctx context.Context, at Place, f *db.PolicyFields, e validation.Errors) error {
	switch SelectorType(f.SelectorType) {
	case SelectAll:
		f.Selector = ""
	case SelectSource:
		if f.Selector == "" {
			e.Add("selector", "Choose a source.")
			return nil
		}
		src, err := s.Store.Source(ctx, at.OrgID, f.Selector)
		if errors.Is(err, db.ErrNotFound) || err == nil && !sourceVisible(src, at) {
			if at.WorkspaceID == nil {
				e.Add("selector", "Choose an organization-wide source: an organization rule binds every workspace.")
			} else {
				e.Add("selector", "Choose a source this workspace sees.")
			}
			return nil
		}
		return err
	case SelectNamespace:
		if !namespacePattern.MatchString(f.Selector) {
			e.Add("selector", "Enter a namespace, the first segment of a tool path: lowercase letters, digits, - and _.")
		}
	case SelectPattern:
		if err := CheckPattern(f.Selector); err != nil {
			e.Add("selector", "Enter a path pattern like github.repos.* or stripe.**: "+err.Error()+".")
		}
	default:
		e.Add("selector_type", "Choose all, source, namespace or pattern.")
	}
	return nil
}

// sourceVisible reports whether a rule of the level may select src: an
// organization rule only the organization's sources, a workspace rule
// those and the workspace's own.
func sourceVisible(src db.Source, at Place) bool {
	if src.WorkspaceID == nil {
		return true
	}
	return at.WorkspaceID != nil && *src.WorkspaceID == *at.WorkspaceID
}
