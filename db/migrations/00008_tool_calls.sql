-- +goose Up
-- The audit of tool calls: one row per call through the gateway, written
-- asynchronously in batches (internal/gateway/audit). Arguments arrive with
-- secret-looking keys redacted and are capped; rows never hold a secret.
CREATE TABLE tool_calls (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id          bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id    bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- The workspace API key the agent used; NULL for the console, or once
    -- the key is deleted (revoked keys stay, so their calls keep their name).
    key_id          bigint REFERENCES api_keys (id) ON DELETE SET NULL,
    -- The key's owner or the console user.
    user_id         bigint REFERENCES users (id) ON DELETE SET NULL,
    -- Where the call came from: mcp or console.
    via             text NOT NULL,
    -- The path the caller asked for. Paths are ASCII, so the C collation
    -- lets one btree serve both exact and prefix filters.
    tool            text COLLATE "C" NOT NULL,
    -- Plain text, not a reference: sources get deleted, their calls stay.
    -- Empty when the path matched no tool.
    source_id       text NOT NULL DEFAULT '',
    arguments       jsonb NOT NULL DEFAULT '{}',
    outcome         text NOT NULL CHECK (outcome IN ('ok', 'error', 'timeout', 'invalid', 'not_found', 'denied')),
    error           text NOT NULL DEFAULT '',
    -- The HTTP status of an OpenAPI or GraphQL upstream; NULL when none.
    upstream_status integer,
    started_at      timestamptz NOT NULL,
    duration_us     bigint NOT NULL CHECK (duration_us >= 0)
);
-- The Activity page: newest first within a workspace, keyset on
-- (started_at, id); also serves the time filters and the workspace cascade.
CREATE INDEX tool_calls_workspace_idx ON tool_calls (workspace_id, started_at DESC, id DESC);
-- Filter by tool: an exact path or a prefix.
CREATE INDEX tool_calls_tool_idx ON tool_calls (workspace_id, tool, started_at DESC, id DESC);
-- Filter by key (a key belongs to one workspace); also the key's SET NULL.
CREATE INDEX tool_calls_key_idx ON tool_calls (key_id, started_at DESC, id DESC) WHERE key_id IS NOT NULL;
-- Filter by outcome: the rows worth looking for are the ones that failed.
CREATE INDEX tool_calls_failed_idx ON tool_calls (workspace_id, outcome, started_at DESC, id DESC) WHERE outcome <> 'ok';
-- The cascades from organizations and users.
CREATE INDEX tool_calls_org_idx ON tool_calls (org_id);
CREATE INDEX tool_calls_user_idx ON tool_calls (user_id) WHERE user_id IS NOT NULL;

-- +goose Down
DROP TABLE tool_calls;
