-- +goose Up
-- An MCP session (Streamable HTTP, protocol 2025-06-18 and 2025-11-25)
-- outlives the replica that created it: any replica behind the load
-- balancer rebuilds it from this row. The state is what the client said in
-- initialize (protocol version, capabilities, client info) and its log level.
CREATE TABLE mcp_sessions (
    id           text PRIMARY KEY,
    key_id       bigint NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    org_id       bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- The tool surface the session was opened with: search or direct.
    mode         text NOT NULL CHECK (mode IN ('search', 'direct')),
    state        jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_sessions_last_seen_idx ON mcp_sessions (last_seen_at);

-- +goose Down
DROP TABLE mcp_sessions;
