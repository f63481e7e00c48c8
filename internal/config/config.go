// Package config reads toolgate's configuration from the environment. It is
// the only package that reads environment variables; everything else receives
// a validated [Config].
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/secrets"
)

// Signup modes for TOOLGATE_SIGNUP.
const (
	SignupOpen   = "open"
	SignupInvite = "invite"
	SignupClosed = "closed"
)

// Config is toolgate's whole configuration.
type Config struct {
	// Addr is the listen address of the HTTP server.
	Addr string
	// BaseURL is the public URL people and agents use to reach the server.
	BaseURL *url.URL
	// DataDir holds the embedded PostgreSQL and Meilisearch and their keys.
	DataDir string

	// DatabaseURL is an external PostgreSQL; empty means the embedded one.
	DatabaseURL string
	// MeiliURL is an external Meilisearch; empty means the embedded one.
	MeiliURL string
	// MeiliMasterKey authenticates to MeiliURL.
	MeiliMasterKey string
	// MeiliBin is the Meilisearch binary for the embedded default.
	MeiliBin string
	// PostgresBinDir holds initdb and postgres for the embedded default.
	PostgresBinDir string

	// Signup is open, invite or closed.
	Signup string
	// SessionLifetime is the absolute lifetime of a console session.
	SessionLifetime time.Duration
	// SessionIdleTimeout ends a session nobody used for this long.
	SessionIdleTimeout time.Duration
	// TrustProxyHeaders takes the client address from X-Forwarded-For.
	TrustProxyHeaders bool

	// SecretKeys is the key ring of credentials, "id:base64" entries with
	// the current key first; empty uses the key file in the data directory
	// on the embedded default.
	SecretKeys string

	// Demo seeds the demo organization on start.
	Demo bool

	// AllowStdio permits MCP sources that run commands on this server.
	AllowStdio bool
	// AllowPrivateNetworks lets outbound requests reach private and
	// loopback addresses (cloud metadata stays refused).
	AllowPrivateNetworks bool
	// OutboundTimeout bounds each outbound request (spec, endpoint, MCP).
	OutboundTimeout time.Duration

	// MeiliIndex is the name of the tools index.
	MeiliIndex string
	// RefreshInterval is how often URL-based and remote sources are refreshed.
	RefreshInterval time.Duration
	// ReconcileInterval is how often the search index is checked against PostgreSQL.
	ReconcileInterval time.Duration
	// WorkerConcurrency is how many jobs one worker runs at once.
	WorkerConcurrency int
	// JobTimeout bounds one job; jobs of a dead worker are retried after twice this.
	JobTimeout time.Duration

	// MaxResultBytes caps an upstream's answer to a tool call.
	MaxResultBytes int64
	// ApprovalWait is how long a call held for approval waits for the
	// decision before it answers with a pending handle; 0 answers at once.
	ApprovalWait time.Duration
	// MCPAllowedHosts are the Host values /mcp answers (DNS-rebinding
	// protection): host or host:port; the base URL's host is always allowed.
	MCPAllowedHosts []string
	// MCPAllowedOrigins are the browser origins /mcp accepts; requests
	// without an Origin header (agents, CLIs) are not affected. The base
	// URL's origin is always allowed.
	MCPAllowedOrigins []string

	// LogFormat is json or text; LogLevel is debug, info, warn or error.
	LogFormat string
	LogLevel  string

	// GCTargetMiB is the heap, in MiB, `serve` lets garbage grow toward
	// before the Go garbage collector runs (0 keeps Go's default, GOGC=100).
	GCTargetMiB int
	// MemoryLimitMiB is the Go runtime's soft memory limit in MiB; 0 takes
	// 90% of the container's memory limit when there is one.
	MemoryLimitMiB int
	// GoRuntimeEnv: GOGC or GOMEMLIMIT is set, and the Go runtime follows
	// it instead of the two settings above.
	GoRuntimeEnv bool
}

// Embedded reports whether toolgate runs its own PostgreSQL.
func (c Config) Embedded() bool { return c.DatabaseURL == "" }

// SecureCookies reports whether cookies must carry the Secure attribute.
func (c Config) SecureCookies() bool { return c.BaseURL.Scheme == "https" }

// Var describes one environment variable; [Vars] is the documented list.
type Var struct {
	Name    string
	Default string
	Doc     string
}

// Vars lists every environment variable toolgate reads, in README order.
var Vars = []Var{
	{"TOOLGATE_ADDR", "127.0.0.1:8080", "Address the HTTP server listens on."},
	{"TOOLGATE_BASE_URL", "http://{TOOLGATE_ADDR}", "Public URL of the console; https makes cookies Secure."},
	{"TOOLGATE_DATA_DIR", "./.data", "Directory for the embedded PostgreSQL and Meilisearch, their keys and the demo sign-in."},
	{"DATABASE_URL", "(embedded)", "External PostgreSQL URL. Empty starts a private PostgreSQL in the data directory."},
	{"MEILI_URL", "(embedded)", "External Meilisearch URL. Empty starts a private Meilisearch in the data directory."},
	{"MEILI_MASTER_KEY", "(generated)", "Meilisearch master key; required with MEILI_URL, generated for the embedded one."},
	{"MEILI_BIN", "(search)", "Meilisearch binary for the embedded default; otherwise PATH, then {TOOLGATE_DATA_DIR}/bin/meilisearch."},
	{"TOOLGATE_POSTGRES_BIN_DIR", "(search)", "Directory holding initdb and postgres; otherwise PATH, then /usr/lib/postgresql/*/bin."},
	{"TOOLGATE_SECRET_KEYS", "(key file)", "Key ring that encrypts credentials: comma-separated id:base64 entries of 32-byte keys, the current key first (`toolgate keys generate` makes one). Required with DATABASE_URL; the embedded default keeps a generated key in {TOOLGATE_DATA_DIR}/secret-keys (mode 0600)."},
	{"TOOLGATE_SIGNUP", "invite", "Who may sign up once the first account exists: open, invite or closed."},
	{"TOOLGATE_SESSION_LIFETIME", "336h", "Absolute lifetime of a console session."},
	{"TOOLGATE_SESSION_IDLE_TIMEOUT", "24h", "A session unused for this long ends (to within a minute, or a tenth of the timeout when that is shorter)."},
	{"TOOLGATE_TRUST_PROXY_HEADERS", "false", "Take the client address from X-Forwarded-For (only behind a proxy you run)."},
	{"TOOLGATE_DEMO", "false", "Seed the demo organization Acme with workspace Default and an owner account."},
	{"TOOLGATE_ALLOW_STDIO", "true on the embedded default, else false", "Allow MCP sources that run a command on this server (stdio transport)."},
	{"TOOLGATE_ALLOW_PRIVATE_NETWORKS", "true with TOOLGATE_DEMO, else false", "Let outbound requests (spec URLs, GraphQL and MCP endpoints) reach private and loopback addresses; cloud metadata addresses stay refused. The demo allows them: its source is toolgate's own API."},
	{"TOOLGATE_OUTBOUND_TIMEOUT", "20s", "Time limit of each outbound request: fetching a spec, introspecting GraphQL, reaching a remote MCP server."},
	{"TOOLGATE_MAX_RESULT_BYTES", "1048576", "Largest upstream answer a tool call returns to an agent; a longer one is cut and says so."},
	{"TOOLGATE_APPROVAL_WAIT", "45s", "How long an agent's call held for approval waits for the decision (sending progress) before it returns a pending result to resume later; 0s to 10m, 0s returns at once."},
	{"TOOLGATE_MCP_ALLOWED_HOSTS", "(base URL host, localhost)", "Comma-separated Host values the MCP endpoint answers (host or host:port), against DNS rebinding. The base URL's host is always allowed; so are localhost, 127.0.0.1 and [::1] when the base URL is on loopback."},
	{"TOOLGATE_MCP_ALLOWED_ORIGINS", "(base URL origin)", "Comma-separated browser origins (scheme://host[:port]) allowed to call the MCP endpoint. Requests without an Origin header, as agents and CLIs send, are unaffected."},
	{"TOOLGATE_MEILI_INDEX", "tools", "Name of the Meilisearch index of tools."},
	{"TOOLGATE_REFRESH_INTERVAL", "6h", "How often sources fetched from a URL or a remote server are refreshed (an unchanged spec answers 304 to its ETag)."},
	{"TOOLGATE_RECONCILE_INTERVAL", "1m", "How often the worker repairs the search index from PostgreSQL."},
	{"TOOLGATE_WORKER_CONCURRENCY", "4", "How many jobs one worker runs at once."},
	{"TOOLGATE_JOB_TIMEOUT", "5m", "Time limit of one job; the jobs of a worker that died are retried after twice this."},
	{"TOOLGATE_GC_TARGET_MIB", "48", "Heap size in MiB that `serve` lets garbage grow toward before Go's garbage collector runs (at least twice the live heap, never past the memory limit): fewer collections per call (a larger target measured slower in the gateway benchmark). 0 keeps Go's default (GOGC=100)."},
	{"TOOLGATE_MEMORY_LIMIT_MIB", "(90% of the container's limit)", "Go's soft memory limit in MiB for `serve`: near it the collector works harder rather than let the process grow. 0 takes 90% of the cgroup memory limit when there is one, else none."},
	{"GOGC", "(unset)", "Go's own collector setting; when GOGC or GOMEMLIMIT is set, `serve` leaves the collector to them and ignores the two settings above."},
	{"GOMEMLIMIT", "(unset)", "Go's own soft memory limit; see GOGC."},
	{"TOOLGATE_LOG_FORMAT", "json", "Log format: json or text."},
	{"TOOLGATE_LOG_LEVEL", "info", "Log level: debug, info, warn or error."},
}

// Load reads the configuration through getenv (os.Getenv in production) and
// validates it. An error names the variable at fault.
func Load(getenv func(string) string) (Config, error) {
	r := reader{getenv: getenv}
	c := Config{
		Addr:               r.str("TOOLGATE_ADDR", "127.0.0.1:8080"),
		DataDir:            r.str("TOOLGATE_DATA_DIR", "./.data"),
		DatabaseURL:        r.str("DATABASE_URL", ""),
		MeiliURL:           r.str("MEILI_URL", ""),
		MeiliMasterKey:     r.str("MEILI_MASTER_KEY", ""),
		MeiliBin:           r.str("MEILI_BIN", ""),
		PostgresBinDir:     r.str("TOOLGATE_POSTGRES_BIN_DIR", ""),
		SecretKeys:         r.str("TOOLGATE_SECRET_KEYS", ""),
		Signup:             r.oneOf("TOOLGATE_SIGNUP", SignupInvite, SignupOpen, SignupInvite, SignupClosed),
		SessionLifetime:    r.duration("TOOLGATE_SESSION_LIFETIME", 336*time.Hour),
		SessionIdleTimeout: r.duration("TOOLGATE_SESSION_IDLE_TIMEOUT", 24*time.Hour),
		TrustProxyHeaders:  r.boolean("TOOLGATE_TRUST_PROXY_HEADERS", false),
		Demo:               r.boolean("TOOLGATE_DEMO", false),
		LogFormat:          r.oneOf("TOOLGATE_LOG_FORMAT", "json", "json", "text"),
		LogLevel:           r.oneOf("TOOLGATE_LOG_LEVEL", "info", "debug", "info", "warn", "error"),
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		r.fail("TOOLGATE_ADDR", "must be host:port, e.g. 127.0.0.1:8080")
	}
	base := r.str("TOOLGATE_BASE_URL", "")
	if base == "" {
		base = "http://" + c.Addr
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.fail("TOOLGATE_BASE_URL", "must be an absolute http or https URL")
		u = &url.URL{Scheme: "http", Host: c.Addr}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c.BaseURL = u
	if c.DatabaseURL != "" {
		if _, err := url.Parse(c.DatabaseURL); err != nil || !strings.HasPrefix(c.DatabaseURL, "postgres") {
			r.fail("DATABASE_URL", "must be a postgres:// or postgresql:// URL")
		}
	}
	if c.MeiliURL != "" {
		mu, err := url.Parse(c.MeiliURL)
		if err != nil || (mu.Scheme != "http" && mu.Scheme != "https") || mu.Host == "" {
			r.fail("MEILI_URL", "must be an absolute http or https URL")
		}
		if c.MeiliMasterKey == "" {
			r.fail("MEILI_MASTER_KEY", "is required when MEILI_URL is set")
		}
	}
	c.AllowStdio = r.boolean("TOOLGATE_ALLOW_STDIO", c.DatabaseURL == "")
	c.AllowPrivateNetworks = r.boolean("TOOLGATE_ALLOW_PRIVATE_NETWORKS", c.Demo)
	c.OutboundTimeout = r.duration("TOOLGATE_OUTBOUND_TIMEOUT", 20*time.Second)
	c.MaxResultBytes = int64(r.integer("TOOLGATE_MAX_RESULT_BYTES", 1<<20, 1<<10, 1<<30))
	c.ApprovalWait = r.boundedDuration("TOOLGATE_APPROVAL_WAIT", 45*time.Second, 0, 10*time.Minute)
	c.MCPAllowedHosts = r.list("TOOLGATE_MCP_ALLOWED_HOSTS", checkHost)
	c.MCPAllowedOrigins = r.list("TOOLGATE_MCP_ALLOWED_ORIGINS", checkOrigin)
	c.MeiliIndex = r.str("TOOLGATE_MEILI_INDEX", "tools")
	if !indexName.MatchString(c.MeiliIndex) {
		r.fail("TOOLGATE_MEILI_INDEX", "must be letters, digits, - and _ (at most 400)")
	}
	c.RefreshInterval = r.duration("TOOLGATE_REFRESH_INTERVAL", 6*time.Hour)
	c.ReconcileInterval = r.duration("TOOLGATE_RECONCILE_INTERVAL", time.Minute)
	c.WorkerConcurrency = r.integer("TOOLGATE_WORKER_CONCURRENCY", 4, 1, 64)
	c.JobTimeout = r.duration("TOOLGATE_JOB_TIMEOUT", 5*time.Minute)
	c.GCTargetMiB = r.integer("TOOLGATE_GC_TARGET_MIB", 48, 0, 1<<20)
	c.MemoryLimitMiB = r.integer("TOOLGATE_MEMORY_LIMIT_MIB", 0, 0, 1<<30)
	c.GoRuntimeEnv = r.str("GOGC", "") != "" || r.str("GOMEMLIMIT", "") != ""
	if c.DataDir == "" {
		r.fail("TOOLGATE_DATA_DIR", "must not be empty")
	} else if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	if c.SecretKeys != "" {
		if _, err := secrets.ParseRing(c.SecretKeys); err != nil {
			r.fail("TOOLGATE_SECRET_KEYS", err.Error())
		}
	}
	if c.SessionIdleTimeout > c.SessionLifetime {
		r.fail("TOOLGATE_SESSION_IDLE_TIMEOUT", "must not exceed TOOLGATE_SESSION_LIFETIME")
	}
	if len(r.errs) > 0 {
		return Config{}, errors.Join(r.errs...)
	}
	return c, nil
}

type reader struct {
	getenv func(string) string
	errs   []error
}

func (r *reader) fail(name, msg string) {
	r.errs = append(r.errs, fmt.Errorf("config: %s %s", name, msg))
}

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

func (r *reader) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(r.str(name, def))
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	r.fail(name, fmt.Sprintf("must be one of %s (got %q)", strings.Join(allowed, ", "), v))
	return def
}

func (r *reader) boolean(name string, def bool) bool {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, fmt.Sprintf("must be true or false (got %q)", v))
		return def
	}
	return b
}

var indexName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,400}$`)

func (r *reader) integer(name string, def, lo, hi int) int {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.fail(name, fmt.Sprintf("must be a whole number from %d to %d (got %q)", lo, hi, v))
		return def
	}
	return n
}

func (r *reader) duration(name string, def time.Duration) time.Duration {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.fail(name, fmt.Sprintf("must be a positive duration such as 90m or 24h (got %q)", v))
		return def
	}
	return d
}

// boundedDuration reads a duration from lo to hi, both included (0 is
// allowed when lo is 0).
func (r *reader) boundedDuration(name string, def, lo, hi time.Duration) time.Duration {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		r.fail(name, fmt.Sprintf("must be a duration from %s to %s such as 45s or 2m (got %q)", lo, hi, v))
		return def
	}
	return d
}

// list reads a comma-separated list, checking each entry; check returns
// what is wrong with one, or "".
func (r *reader) list(name string, check func(string) string) []string {
	var out []string
	for _, v := range strings.Split(r.str(name, ""), ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if msg := check(v); msg != "" {
			r.fail(name, fmt.Sprintf("entry %q %s", v, msg))
			continue
		}
		out = append(out, strings.ToLower(v))
	}
	return out
}

func checkHost(v string) string {
	if strings.ContainsAny(v, "/ @") {
		return "must be a host or host:port, without scheme or path"
	}
	return ""
}

func checkOrigin(v string) string {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "must be an origin: scheme://host[:port]"
	}
	return ""
}
