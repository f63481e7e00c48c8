// Package apikeys renders a workspace's API keys: the list, the create form
// and the one-time display of a new key.
package apikeys

import (
	"time"

	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
	"github.com/toolgate/toolgate/views/ui"
)

// FormID is the create form's element id, which htmx swaps on errors.
const FormID = "api-key-form"

// RowID is the id of a key's row in the list.
func RowID(id string) string { return "api-key-" + id }

// Page lists a workspace's API keys and creates them.
type Page struct {
	Meta layout.Meta
	Rows []Row
	// Form is nil when the caller may not create keys (viewers).
	Form    *Form
	Created *Created
}

// Form is the create form's state.
type Form struct {
	CSRF          string
	Action        string
	Name          string
	Mode          string
	ExpiresInDays string
	Errors        validation.Errors
}

// Row is one key in the list: metadata only.
type Row struct {
	ID         string
	Name       string
	Prefix     string
	Owner      string
	Mode       string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	// RevokeURL is empty when the caller may not revoke the key.
	RevokeURL string
}

// Created is a new key, shown once right after creation.
type Created struct {
	Name  string
	Value string
}

// ModeOptions are the choices of the mode select.
var ModeOptions = []ui.Option{
	{Value: "search", Label: "Search: search, describe and call tools"},
	{Value: "direct", Label: "Direct: every tool listed by name"},
}

// ExpiryOptions are the choices of the expiry select.
var ExpiryOptions = []ui.Option{
	{Value: "30", Label: "30 days"}, {Value: "90", Label: "90 days"}, {Value: "366", Label: "1 year"}, {Value: "0", Label: "No expiry"},
}
