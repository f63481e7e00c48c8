// Package connect renders the "Connect an agent" page: the workspace's MCP
// endpoint, a mode switch, an API key made on the spot and copy-ready
// configuration for the usual MCP clients.
package connect

import (
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/layout"
)

// BodyID is the element the mode switch and the key form swap.
const BodyID = "connect-body"

// KeyPlaceholder stands for a key in the snippets until one is created.
const KeyPlaceholder = "tgk_..."

// Modes of the switch; the URL of direct mode adds ?mode=direct.
const (
	ModeSearch = "search"
	ModeDirect = "direct"
)

// Page is the whole page.
type Page struct {
	Meta layout.Meta
	Body Body
}

// Body is the part that changes with the mode and a new key.
type Body struct {
	// MCPURL is the endpoint agents use in this mode.
	MCPURL string
	Mode   string
	// SearchURL and DirectURL show this page in each mode.
	SearchURL  string
	DirectURL  string
	APIKeysURL string
	// Key is KeyPlaceholder, or the key just created.
	Key string
	// Created is set when Key was just created: it is shown this once.
	Created *Created
	// Form creates a key; nil for viewers.
	Form *KeyForm
}

// Created names the key just created.
type Created struct {
	Name string
}

// KeyForm creates an API key in the current mode.
type KeyForm struct {
	CSRF          string
	Action        string
	Mode          string
	Name          string
	ExpiresInDays string
	Errors        validation.Errors
}

// ModeURL is the link of the switch to mode.
func (b Body) ModeURL(mode string) string {
	if mode == ModeDirect {
		return b.DirectURL
	}
	return b.SearchURL
}
