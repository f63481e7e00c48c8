// Package tools renders the workspace's tool catalog, a tool's page and the
// registry dashboard.
package tools

import (
	"time"

	"github.com/toolgate/toolgate/views/layout"
)

// CatalogPage is the searchable tool catalog.
type CatalogPage struct {
	Meta     layout.Meta
	Action   string
	Q        string
	Source   string
	Type     string
	Approval string
	Sources  []Option
	Results  Results
}

// Option is a filter choice.
type Option struct{ Value, Label string }

// Results is one page of hits.
type Results struct {
	Hits     []Hit
	Total    int
	Degraded bool
	Query    string
	MoreURL  string
	Searched bool
}

// Hit is one tool in the results.
type Hit struct {
	URL             string
	Path            string
	Description     string
	SourceName      string
	Type            string
	DefaultApproval string
	Enabled         bool
}

// ToolPage shows one tool.
type ToolPage struct {
	Meta            layout.Meta
	Path            string
	Title           string
	Description     string
	Aliases         []string
	DefaultApproval string
	SourceName      string
	SourceURL       string
	SourceEnabled   bool
	Type            string
	Inputs          []Field
	Outputs         []Field
	InputJSON       string
	OutputJSON      string
	Example         string
	Annotations     []string
	CatalogURL      string
	TryIt           TryIt
}

// Field is one row of a schema table.
type Field struct {
	Name        string
	Type        string
	Required    bool
	Description string
	Depth       int
}

// DashboardPage is the workspace's registry at a glance.
type DashboardPage struct {
	Meta          layout.Meta
	Registry      Registry
	CanEdit       bool
	RefreshAllURL string
	SourcesURL    string
	NewSourceURL  string
	CatalogURL    string
}

// Registry is the live part of the dashboard, polled while anything works.
type Registry struct {
	PollURL    string
	TotalTools int
	Sources    []SourceState
	Busy       bool
	Degraded   bool
}

// SourceState is one source's row on the dashboard.
type SourceState struct {
	Name, URL, Type, Scope, State, Error, IndexError string
	Enabled                                          bool
	ToolCount                                        int
	LastRefreshed                                    *time.Time
	Described, Typed                                 string
}
