// Package ui holds the console's shared parts: form fields, empty states,
// page headings and badges.
package ui

import (
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/validation"
)

// Input describes one form field.
type Input struct {
	Name         string
	Label        string
	Type         string // text, email, password, number
	Value        string
	Hint         string
	Error        string
	Autocomplete string
	Required     bool
	Autofocus    bool
	MaxLength    int
	Placeholder  string
	Pattern      string
}

func (in Input) id() string { return "f-" + in.Name }

func (in Input) typ() string {
	if in.Type == "" {
		return "text"
	}
	return in.Type
}

func (in Input) maxLength() string {
	if in.MaxLength == 0 {
		return ""
	}
	return strconv.Itoa(in.MaxLength)
}

func (in Input) describedBy() string {
	switch {
	case in.Error != "":
		return in.id() + "-error"
	case in.Hint != "":
		return in.id() + "-hint"
	}
	return ""
}

// Option is one choice of a select.
type Option struct {
	Value string
	Label string
}

// Select describes a select field.
type Select struct {
	Name    string
	Label   string
	Value   string
	Options []Option
	Hint    string
	Error   string
}

func (s Select) id() string { return "f-" + s.Name }

// Filters is a list page's filter form, whose fields are its children.
type Filters struct {
	Action string // the list's URL, where the form is sent
	Target string // the element id whose content filtering swaps
	TestID string
	Active bool   // a filter is set: offer Clear
	Hint   string // a line of help beside the buttons; may be empty
	// CursorError says the page's cursor was refused; empty when it was not.
	CursorError string
}

// NameForm is the state of a name-and-URL-name form (organizations and
// workspaces).
type NameForm struct {
	CSRF   string
	Action string
	Name   string
	Slug   string
	Errors validation.Errors
}

// Clip shortens s to n characters, ending with "…" when it was longer.
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// When formats an optional time, or says never.
func When(t *time.Time, never string) string {
	if t == nil {
		return never
	}
	return t.Format("2 Jan 2006 15:04")
}
