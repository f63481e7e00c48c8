-- +goose Up
-- A workspace API key lets an agent reach the MCP endpoint as its owner
-- (whose account credentials and role apply, and whom the audit names).
-- Only the SHA-256 of the key is stored; the prefix identifies it in lists.
CREATE TABLE api_keys (
    id           bigserial PRIMARY KEY,
    org_id       bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- The owner: the user the key acts as.
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    prefix       text NOT NULL,
    key_hash     bytea NOT NULL UNIQUE,
    -- The tool surface agents see: search (meta-tools) or direct (every tool).
    mode         text NOT NULL DEFAULT 'search' CHECK (mode IN ('search', 'direct')),
    created_by   bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_workspace_idx ON api_keys (org_id, workspace_id, created_at DESC) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_user_idx ON api_keys (user_id);

-- +goose Down
DROP TABLE api_keys;
