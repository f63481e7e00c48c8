package policy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
)

// MaxConditionLen is the longest CEL condition a rule may carry, in bytes.
const MaxConditionLen = 4000

// costLimit bounds one condition's evaluation (CEL's abstract cost units;
// each visited node, comparison or list element costs about one). A
// condition over normal arguments costs tens; a hostile one, such as a
// comprehension over a huge argument list or nested comprehensions, stops
// with an error, which fails closed.
const costLimit = 100_000

// env is the one CEL environment every condition compiles in:
//
//	args    map(string, dyn)  the call's arguments as decoded JSON
//	tool    map(string, dyn)  path, namespace, source, source_id, type,
//	                          method, annotations (a map)
//	caller  map(string, dyn)  user (email), user_id (int), role,
//	                          key (API key name, "" for the console),
//	                          key_id (int, 0 for the console)
//	now     timestamp         the time of the call
//
// with CEL's standard library, the strings extension, and cross-type
// numeric comparisons so that `args.amount > 100` holds for a JSON number
// decoded as a float64.
var env = sync.OnceValue(func() *cel.Env {
	e, err := cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("tool", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("caller", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("now", cel.TimestampType),
		ext.Strings(),
		cel.CrossTypeNumericComparisons(true),
		// Report bad literals with their position when checking (regular
		// expressions are checked by checkRegexps, with a better message).
		cel.ASTValidators(cel.ValidateTimestampLiterals(), cel.ValidateDurationLiterals()),
		cel.ParserRecursionLimit(100),
		cel.ParserExpressionSizeLimit(MaxConditionLen),
		cel.ExpressionNodeLimit(2000),
	)
	if err != nil {
		panic(fmt.Sprintf("policy: the CEL environment does not build: %v", err))
	}
	return e
})

// CheckCondition reports whether src is a usable condition: it parses,
// type-checks in the policy environment and has type bool. It returns nil
// for a usable condition and for the empty string (no condition);
// otherwise the first problem, with its line and column (1-based, counted
// in characters) and byte offset (0-based) into src.
func CheckCondition(src string) *ConditionError {
	_, _, cerr := compileCondition(src)
	return cerr
}

// compileCondition type-checks src and plans the program that evaluates
// calls; both are nil for an empty condition.
func compileCondition(src string) (*cel.Ast, cel.Program, *ConditionError) {
	if src == "" {
		return nil, nil, nil
	}
	if len(src) > MaxConditionLen {
		return nil, nil, &ConditionError{
			Message: fmt.Sprintf("the condition is %d bytes long; the limit is %d", len(src), MaxConditionLen),
			Line:    1, Column: 1,
		}
	}
	if !utf8.ValidString(src) {
		off := firstInvalidUTF8(src)
		line, col := lineCol(src, off)
		return nil, nil, &ConditionError{Message: "the condition is not valid UTF-8", Line: line, Column: col, Offset: off}
	}
	ast, iss := env().Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, nil, issueError(src, iss)
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, nil, &ConditionError{
			Message: fmt.Sprintf("the condition must be a bool, but it is %s; compare it, e.g. `args.dry_run == true`",
				t.String()),
			Line: 1, Column: 1,
		}
	}
	if cerr := checkKeys(src, ast.NativeRep()); cerr != nil {
		return nil, nil, cerr
	}
	if cerr := checkRegexps(src, ast.NativeRep()); cerr != nil {
		return nil, nil, cerr
	}
	// Planning compiles constant regular expressions, among others; a
	// failure here would otherwise surface only in Compile.
	prg, err := env().Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, nil, &ConditionError{Message: err.Error(), Line: 1, Column: 1}
	}
	return ast, prg, nil
}

// fixedKeys are the keys of the `tool` and `caller` maps. The checker sees
// both as map(string, dyn), so a misspelt key would compile and then fail
// every call; checkKeys reports it at once instead.
var fixedKeys = map[string][]string{
	"tool":   {"path", "namespace", "source", "source_id", "type", "method", "annotations"},
	"caller": {"user", "user_id", "role", "key", "key_id"},
}

// checkKeys reports the first `tool.x` or `caller.x` whose key does not
// exist.
func checkKeys(src string, a *celast.AST) *ConditionError {
	refs := a.ReferenceMap()
	// A comprehension variable may be called tool or caller; the checker
	// names it like the global, so leave such a name unchecked.
	shadowed := map[string]bool{}
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.ComprehensionKind {
			c := e.AsComprehension()
			shadowed[c.IterVar()], shadowed[c.IterVar2()], shadowed[c.AccuVar()] = true, true, true
		}
	}))
	var bad celast.Expr
	badOff := -1
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.SelectKind {
			return
		}
		sel := e.AsSelect()
		op := sel.Operand()
		if op.Kind() != celast.IdentKind {
			return
		}
		ref, ok := refs[op.ID()]
		if !ok {
			return // a comprehension variable, not the declared one
		}
		keys, fixed := fixedKeys[ref.Name]
		if !fixed || shadowed[ref.Name] || slices.Contains(keys, sel.FieldName()) {
			return
		}
		off := -1
		if r, ok := a.SourceInfo().GetOffsetRange(e.ID()); ok {
			off = int(r.Start)
		}
		if bad == nil || off < badOff {
			bad, badOff = e, off
		}
	}))
	if bad == nil {
		return nil
	}
	sel := bad.AsSelect()
	name := sel.Operand().AsIdent()
	msg := fmt.Sprintf("%s has no key %q; its keys are %s", name, sel.FieldName(), strings.Join(fixedKeys[name], ", "))
	cerr := exprError(src, a, bad.ID(), msg)
	if cerr.Offset < len(src) && src[cerr.Offset] == '.' {
		cerr.Offset++ // point at the key, not the dot before it
		cerr.Line, cerr.Column = lineCol(src, cerr.Offset)
	}
	return cerr
}

// issueError turns the first of cel-go's issues into a ConditionError.
// cel-go reports a 1-based line and a 0-based column counted in code
// points.
func issueError(src string, iss *cel.Issues) *ConditionError {
	errs := iss.Errors()
	if len(errs) == 0 {
		return &ConditionError{Message: iss.Err().Error(), Line: 1, Column: 1}
	}
	first := errs[0]
	msg := first.Message
	if better, ok := literalHints[msg]; ok {
		msg = better
	}
	line, col := 1, 0
	if loc := first.Location; loc != nil && loc.Line() > 0 {
		line, col = loc.Line(), loc.Column()
	}
	off := byteOffset(src, line, col)
	line, col1 := lineCol(src, off)
	return &ConditionError{Message: msg, Line: line, Column: col1, Offset: off}
}

// literalHints replace cel-go's terse messages about bad literals.
var literalHints = map[string]string{
	"invalid timestamp argument": `invalid timestamp: write it in RFC 3339, e.g. timestamp("2026-01-31T09:00:00Z")`,
	"invalid duration argument":  `invalid duration: write it like duration("90s") or duration("1h30m")`,
}

// checkRegexps reports the first constant regular expression given to
// matches that does not compile, with Go's reason.
func checkRegexps(src string, a *celast.AST) *ConditionError {
	var first *ConditionError
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if first != nil || e.Kind() != celast.CallKind || e.AsCall().FunctionName() != "matches" {
			return
		}
		args := e.AsCall().Args()
		if len(args) == 0 || args[len(args)-1].Kind() != celast.LiteralKind {
			return
		}
		lit := args[len(args)-1]
		pattern, ok := lit.AsLiteral().Value().(string)
		if !ok {
			return
		}
		if _, err := regexp.Compile(pattern); err != nil {
			first = exprError(src, a, lit.ID(), "invalid regular expression: "+err.Error())
		}
	}))
	return first
}

// exprError is a ConditionError at the start of the expression id.
func exprError(src string, a *celast.AST, id int64, msg string) *ConditionError {
	line, col := 1, 0
	if loc := a.SourceInfo().GetStartLocation(id); loc.Line() > 0 {
		line, col = loc.Line(), loc.Column()
	}
	off := byteOffset(src, line, col)
	line, col1 := lineCol(src, off)
	return &ConditionError{Message: msg, Line: line, Column: col1, Offset: off}
}

// byteOffset is the byte offset of a 1-based line and 0-based code-point
// column, clamped to src.
func byteOffset(src string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := indexNewline(src[off:])
		if i < 0 {
			return len(src)
		}
		off += i + 1
	}
	for c := 0; c < col && off < len(src) && src[off] != '\n'; c++ {
		_, size := utf8.DecodeRuneInString(src[off:])
		off += size
	}
	return off
}

// lineCol is the 1-based line and column (in code points) of a byte offset.
func lineCol(src string, off int) (line, col int) {
	line, col = 1, 1
	for i, r := range src {
		if i >= off {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func indexNewline(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return i
		}
	}
	return -1
}

func firstInvalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return len(s)
}

// condition is a compiled condition: one program for calls and one with
// `args` unknown for listings.
type condition struct {
	prg     cel.Program
	partial cel.Program
	uses    uses
}

// newCondition compiles src into programs with a cost limit.
func newCondition(src string) (*condition, error) {
	ast, prg, cerr := compileCondition(src)
	if cerr != nil {
		return nil, fmt.Errorf("line %d, column %d: %s", cerr.Line, cerr.Column, cerr.Message)
	}
	if ast == nil {
		return nil, nil
	}
	partial, err := env().Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptPartialEval))
	if err != nil {
		return nil, err
	}
	return &condition{prg: prg, partial: partial, uses: usesOf(ast.NativeRep())}, nil
}

// uses says which variables a condition reads, and how.
type uses struct {
	args bool
	// wholeTool and wholeCaller: the condition uses `tool` or `caller`
	// other than by selecting a key (`"method" in tool`, `tool["path"]`),
	// so it needs them as real maps.
	wholeTool, wholeCaller bool
}

// usesOf walks a checked AST for the declared variables it reads.
func usesOf(a *celast.AST) uses {
	refs := a.ReferenceMap()
	declared := func(e celast.Expr) string {
		if e.Kind() != celast.IdentKind {
			return ""
		}
		if ref, ok := refs[e.ID()]; ok {
			return ref.Name
		}
		return ""
	}
	var u uses
	selected := map[int64]bool{} // idents that are a select's operand
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.SelectKind {
			if op := e.AsSelect().Operand(); declared(op) != "" {
				selected[op.ID()] = true
			}
		}
	}))
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch declared(e) {
		case "args":
			u.args = true
		case "tool":
			u.wholeTool = u.wholeTool || !selected[e.ID()]
		case "caller":
			u.wholeCaller = u.wholeCaller || !selected[e.ID()]
		}
	}))
	return u
}

// errNotBool is a condition that evaluated to something other than a bool
// (possible only through dyn values the checker could not see).
var errNotBool = errors.New("the condition did not evaluate to a bool")

// eval runs the condition for one call.
func (c *condition) eval(a *activation) (bool, error) {
	a.uses = c.uses
	out, _, err := c.prg.Eval(a)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, errNotBool
	}
	return bool(b), nil
}

// tri is the outcome of a condition when args are unknown.
type tri int

const (
	triFalse tri = iota
	triTrue
	triMaybe // depends on args, or could not be evaluated
)

// evalPartial runs the condition with `args` unknown.
func (c *condition) evalPartial(a *activation) tri {
	a.uses = c.uses
	pa, err := cel.PartialVars(a, cel.AttributePattern("args"))
	if err != nil {
		return triMaybe
	}
	out, _, err := c.partial.Eval(pa)
	if err != nil {
		// An error with args unknown may become a value once they are
		// known (error || true is true), so it decides nothing.
		return triMaybe
	}
	switch v := out.(type) {
	case types.Bool:
		if v {
			return triTrue
		}
		return triFalse
	}
	return triMaybe // unknown, or not a bool
}
