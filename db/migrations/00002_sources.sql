-- +goose Up
CREATE TABLE sources (
    id               text PRIMARY KEY CHECK (id ~ '^src_[0-9a-f-]{36}$'),
    org_id           bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    -- NULL for organization scope: visible in every workspace of the organization.
    workspace_id     bigint REFERENCES workspaces (id) ON DELETE CASCADE,
    scope            text NOT NULL CHECK (scope IN ('workspace', 'organization')),
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    -- The namespace of the source's tool paths.
    slug             text NOT NULL CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$'),
    type             text NOT NULL CHECK (type IN ('mcp', 'openapi', 'graphql')),
    config_version   int NOT NULL,
    config           jsonb NOT NULL,
    enabled          boolean NOT NULL DEFAULT true,
    state            text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'loading', 'indexing', 'ready', 'failed')),
    error            text NOT NULL DEFAULT '',
    warnings         jsonb NOT NULL DEFAULT '[]',
    spec_hash        text NOT NULL DEFAULT '',
    auth_fingerprint text NOT NULL DEFAULT '',
    etag             text NOT NULL DEFAULT '',
    base_url         text NOT NULL DEFAULT '',
    server           text NOT NULL DEFAULT '',
    auth_profile     jsonb,
    quality          jsonb,
    tool_count       int NOT NULL DEFAULT 0,
    discovery_ms     int NOT NULL DEFAULT 0,
    last_refreshed_at timestamptz,
    last_success_at  timestamptz,
    last_failure_at  timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((scope = 'organization') = (workspace_id IS NULL))
);
-- Names are unique within a scope, ignoring case.
CREATE UNIQUE INDEX sources_org_name_key ON sources (org_id, lower(name)) WHERE workspace_id IS NULL;
CREATE UNIQUE INDEX sources_ws_name_key ON sources (org_id, workspace_id, lower(name)) WHERE workspace_id IS NOT NULL;
CREATE UNIQUE INDEX sources_org_slug_key ON sources (org_id, slug) WHERE workspace_id IS NULL;
CREATE UNIQUE INDEX sources_ws_slug_key ON sources (org_id, workspace_id, slug) WHERE workspace_id IS NOT NULL;
CREATE INDEX sources_workspace_idx ON sources (org_id, workspace_id);

-- Tools are stored once per source, never copied per workspace.
CREATE TABLE source_tools (
    source_id        text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    path             text NOT NULL CHECK (length(path) <= 64),
    name             text NOT NULL,
    aliases          text[] NOT NULL DEFAULT '{}',
    title            text NOT NULL DEFAULT '',
    description      text NOT NULL DEFAULT '',
    input_schema     jsonb NOT NULL,
    output_schema    jsonb,
    annotations      jsonb NOT NULL DEFAULT '{}',
    default_approval text NOT NULL CHECK (default_approval IN ('auto', 'required')),
    ref              jsonb NOT NULL,
    PRIMARY KEY (source_id, path)
);

-- +goose Down
DROP TABLE source_tools;
DROP TABLE sources;
