package policy

import (
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// activation holds one call's variables for its conditions. It is
// allocated once per Decide or Hidden and used by one goroutine.
type activation struct {
	tool   Tool
	caller Caller
	args   map[string]any
	now    time.Time

	// uses is the condition being evaluated's; set before each evaluation.
	uses uses
	// toolVal and callerVal are the maps built for conditions that use
	// `tool` or `caller` as a whole, once per call.
	toolVal, callerVal ref.Val
}

var (
	_           interpreter.Activation = (*activation)(nil)
	emptyArgs                          = map[string]any{}
	emptyAnnots                        = map[string]any{}
)

// ResolveName implements interpreter.Activation. A condition that only
// selects keys (`tool.method`, `has(caller.key)`) gets a view that looks
// each key up in the Tool or Caller; one that uses the variable as a whole
// gets a real map, built once.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "args":
		if a.args == nil {
			return emptyArgs, true
		}
		return a.args, true
	case "tool":
		if !a.uses.wholeTool {
			return toolView{&a.tool}, true
		}
		if a.toolVal == nil {
			a.toolVal = types.DefaultTypeAdapter.NativeToValue(toolMap(&a.tool))
		}
		return a.toolVal, true
	case "caller":
		if !a.uses.wholeCaller {
			return callerView{&a.caller}, true
		}
		if a.callerVal == nil {
			a.callerVal = types.DefaultTypeAdapter.NativeToValue(callerMap(&a.caller))
		}
		return a.callerVal, true
	case "now":
		return a.now, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// toolView is `tool` for a condition that only selects its keys; cel-go
// qualifies it through FindStringKey without building a map.
type toolView struct{ t *Tool }

// FindStringKey returns the value of one of `tool`'s keys.
func (v toolView) FindStringKey(k string) (any, bool) {
	switch k {
	case "path":
		return types.String(v.t.Path), true
	case "namespace":
		return types.String(v.t.Namespace), true
	case "source":
		return types.String(v.t.Source), true
	case "source_id":
		return types.String(v.t.SourceID), true
	case "type":
		return types.String(v.t.Type), true
	case "method":
		return types.String(v.t.Method), true
	case "annotations":
		if v.t.Annotations == nil {
			return emptyAnnots, true
		}
		return v.t.Annotations, true
	}
	return nil, false
}

// callerView is `caller` for a condition that only selects its keys.
type callerView struct{ c *Caller }

// FindStringKey returns the value of one of `caller`'s keys.
func (v callerView) FindStringKey(k string) (any, bool) {
	switch k {
	case "user":
		return types.String(v.c.UserEmail), true
	case "user_id":
		return types.Int(v.c.UserID), true
	case "role":
		return types.String(v.c.Role), true
	case "key":
		return types.String(v.c.KeyName), true
	case "key_id":
		return types.Int(v.c.KeyID), true
	}
	return nil, false
}

func toolMap(t *Tool) map[string]any {
	annots := t.Annotations
	if annots == nil {
		annots = emptyAnnots
	}
	return map[string]any{
		"path":        t.Path,
		"namespace":   t.Namespace,
		"source":      t.Source,
		"source_id":   t.SourceID,
		"type":        t.Type,
		"method":      t.Method,
		"annotations": annots,
	}
}

func callerMap(c *Caller) map[string]any {
	return map[string]any{
		"user":    c.UserEmail,
		"user_id": c.UserID,
		"role":    c.Role,
		"key":     c.KeyName,
		"key_id":  c.KeyID,
	}
}
