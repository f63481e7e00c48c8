package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReadmeListsVars keeps README.md's configuration table equal to [Vars]:
// the same names in the same order, with the same defaults and meanings.
func TestReadmeListsVars(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	got := readmeVars(t, string(readme))
	if diff := cmp.Diff(Vars, got); diff != "" {
		t.Errorf("README.md's configuration table differs from config.Vars (-Vars +README):\n%s", diff)
	}
}

// readmeVars parses the first table under "## Configuration": rows of
// | `NAME` | `default` | meaning |, after the header and separator rows.
func readmeVars(t *testing.T, readme string) []Var {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Configuration\n")
	if !ok {
		t.Fatal(`README.md has no "## Configuration" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var table []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			table = append(table, line)
		} else if len(table) > 0 {
			break
		}
	}
	if len(table) < 2 {
		t.Fatal("README.md's configuration section has no table")
	}
	var out []Var
	for _, row := range table[2:] {
		cells := strings.Split(strings.Trim(row, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("configuration row has %d cells, want 3: %s", len(cells), row)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		name := unquote(cells[0])
		if name == cells[0] {
			t.Errorf("variable %s is not in backticks", name)
		}
		out = append(out, Var{Name: name, Default: unquote(cells[1]), Doc: cells[2]})
	}
	return out
}

// unquote removes the backticks around a code span.
func unquote(s string) string {
	if len(s) >= 2 && strings.HasPrefix(s, "`") && strings.HasSuffix(s, "`") {
		return s[1 : len(s)-1]
	}
	return s
}

// TestLoadReadsVars checks that Load reads every variable of [Vars] and no other.
func TestLoadReadsVars(t *testing.T) {
	var read []string
	if _, err := Load(func(name string) string { read = append(read, name); return "" }); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, v := range Vars {
		documented = append(documented, v.Name)
	}
	slices.Sort(read)
	slices.Sort(documented)
	if diff := cmp.Diff(documented, slices.Compact(read)); diff != "" {
		t.Errorf("variables Load reads differ from config.Vars (-Vars +read):\n%s", diff)
	}
}

// loaded is the part of a Config the Load table compares.
type loaded struct {
	Addr, BaseURL, DataDir, DatabaseURL, Signup, MeiliIndex, LogFormat, LogLevel string
	SessionLifetime, SessionIdleTimeout, OutboundTimeout                         time.Duration
	RefreshInterval, ReconcileInterval, JobTimeout, ApprovalWait                 time.Duration
	WorkerConcurrency                                                            int
	AllowStdio, AllowPrivateNetworks, TrustProxyHeaders, Demo                    bool
}

func loadedOf(c Config) loaded {
	return loaded{Addr: c.Addr, BaseURL: c.BaseURL.String(), DataDir: c.DataDir, DatabaseURL: c.DatabaseURL, Signup: c.Signup,
		MeiliIndex: c.MeiliIndex, LogFormat: c.LogFormat, LogLevel: c.LogLevel,
		SessionLifetime: c.SessionLifetime, SessionIdleTimeout: c.SessionIdleTimeout, OutboundTimeout: c.OutboundTimeout,
		RefreshInterval: c.RefreshInterval, ReconcileInterval: c.ReconcileInterval, JobTimeout: c.JobTimeout,
		ApprovalWait: c.ApprovalWait, WorkerConcurrency: c.WorkerConcurrency, AllowStdio: c.AllowStdio, AllowPrivateNetworks: c.AllowPrivateNetworks,
		TrustProxyHeaders: c.TrustProxyHeaders, Demo: c.Demo}
}

func TestLoad(t *testing.T) {
	dataDir, err := filepath.Abs("./.data")
	if err != nil {
		t.Fatal(err)
	}
	defaults := loaded{Addr: "127.0.0.1:8080", BaseURL: "http://127.0.0.1:8080", DataDir: dataDir, Signup: SignupInvite,
		MeiliIndex: "tools", LogFormat: "json", LogLevel: "info",
		SessionLifetime: 336 * time.Hour, SessionIdleTimeout: 24 * time.Hour, OutboundTimeout: 20 * time.Second,
		RefreshInterval: 6 * time.Hour, ReconcileInterval: time.Minute, JobTimeout: 5 * time.Minute,
		ApprovalWait: 45 * time.Second, WorkerConcurrency: 4, AllowStdio: true}
	with := func(change func(*loaded)) loaded {
		l := defaults
		change(&l)
		return l
	}
	const pg = "postgres://toolgate@db.internal:5432/toolgate"

	tests := []struct {
		name string
		env  map[string]string
		want loaded
		// wantErr is the variable every line of the error must name.
		wantErr string
	}{
		{name: "defaults", want: defaults},
		{name: "external database refuses stdio", env: map[string]string{"DATABASE_URL": pg},
			want: with(func(l *loaded) { l.DatabaseURL, l.AllowStdio = pg, false })},
		{name: "external database with stdio allowed", env: map[string]string{"DATABASE_URL": pg, "TOOLGATE_ALLOW_STDIO": "true"},
			want: with(func(l *loaded) { l.DatabaseURL = pg })},
		{name: "embedded with stdio refused", env: map[string]string{"TOOLGATE_ALLOW_STDIO": "false"},
			want: with(func(l *loaded) { l.AllowStdio = false })},
		{name: "demo reaches loopback", env: map[string]string{"TOOLGATE_DEMO": "true"},
			want: with(func(l *loaded) { l.Demo, l.AllowPrivateNetworks = true, true })},
		{name: "demo with private networks refused", env: map[string]string{"TOOLGATE_DEMO": "true", "TOOLGATE_ALLOW_PRIVATE_NETWORKS": "false"},
			want: with(func(l *loaded) { l.Demo = true })},
		{name: "worker settings", env: map[string]string{"TOOLGATE_MEILI_INDEX": "tools_staging-2", "TOOLGATE_REFRESH_INTERVAL": "90m",
			"TOOLGATE_RECONCILE_INTERVAL": "30s", "TOOLGATE_WORKER_CONCURRENCY": "16", "TOOLGATE_JOB_TIMEOUT": "2m"},
			want: with(func(l *loaded) {
				l.MeiliIndex, l.RefreshInterval, l.ReconcileInterval = "tools_staging-2", 90*time.Minute, 30*time.Second
				l.WorkerConcurrency, l.JobTimeout = 16, 2*time.Minute
			})},
		{name: "approvals answer at once", env: map[string]string{"TOOLGATE_APPROVAL_WAIT": "0s"},
			want: with(func(l *loaded) { l.ApprovalWait = 0 })},
		{name: "approvals wait the longest", env: map[string]string{"TOOLGATE_APPROVAL_WAIT": "10m"},
			want: with(func(l *loaded) { l.ApprovalWait = 10 * time.Minute })},
		{name: "base URL follows the address", env: map[string]string{"TOOLGATE_ADDR": "0.0.0.0:9090"},
			want: with(func(l *loaded) { l.Addr, l.BaseURL = "0.0.0.0:9090", "http://0.0.0.0:9090" })},

		{name: "zero workers", env: map[string]string{"TOOLGATE_WORKER_CONCURRENCY": "0"}, wantErr: "TOOLGATE_WORKER_CONCURRENCY"},
		{name: "workers not a number", env: map[string]string{"TOOLGATE_WORKER_CONCURRENCY": "abc"}, wantErr: "TOOLGATE_WORKER_CONCURRENCY"},
		{name: "bad index name", env: map[string]string{"TOOLGATE_MEILI_INDEX": "bad name!"}, wantErr: "TOOLGATE_MEILI_INDEX"},
		{name: "negative refresh interval", env: map[string]string{"TOOLGATE_REFRESH_INTERVAL": "-1s"}, wantErr: "TOOLGATE_REFRESH_INTERVAL"},
		{name: "bad reconcile interval", env: map[string]string{"TOOLGATE_RECONCILE_INTERVAL": "soon"}, wantErr: "TOOLGATE_RECONCILE_INTERVAL"},
		{name: "approval wait too long", env: map[string]string{"TOOLGATE_APPROVAL_WAIT": "11m"}, wantErr: "TOOLGATE_APPROVAL_WAIT"},
		{name: "negative approval wait", env: map[string]string{"TOOLGATE_APPROVAL_WAIT": "-1s"}, wantErr: "TOOLGATE_APPROVAL_WAIT"},
		{name: "zero job timeout", env: map[string]string{"TOOLGATE_JOB_TIMEOUT": "0s"}, wantErr: "TOOLGATE_JOB_TIMEOUT"},
		{name: "idle timeout beyond lifetime", env: map[string]string{"TOOLGATE_SESSION_LIFETIME": "24h", "TOOLGATE_SESSION_IDLE_TIMEOUT": "48h"},
			wantErr: "TOOLGATE_SESSION_IDLE_TIMEOUT"},
		{name: "Meilisearch without key", env: map[string]string{"MEILI_URL": "http://127.0.0.1:7700"}, wantErr: "MEILI_MASTER_KEY"},
		{name: "not PostgreSQL", env: map[string]string{"DATABASE_URL": "mysql://x"}, wantErr: "DATABASE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(func(name string) string { return tt.env[name] })
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Load succeeded, want an error naming %s", tt.wantErr)
				}
				for _, line := range strings.Split(err.Error(), "\n") {
					if !strings.HasPrefix(line, "config: "+tt.wantErr+" ") {
						t.Errorf("error line %q does not name %s", line, tt.wantErr)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tt.want, loadedOf(c)); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}
