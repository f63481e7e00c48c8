-- +goose Up
-- A credential authenticates requests to one source's upstream. Its secret
-- is sealed with AES-256-GCM (internal/secrets); the associated data binds
-- the ciphertext to the credential's id and organization.
CREATE TABLE credentials (
    id            text PRIMARY KEY CHECK (id ~ '^cred_[0-9a-f-]{36}$'),
    org_id        bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    -- The binding, source:<id>; deleting the source deletes its credentials.
    source_id     text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    scope         text NOT NULL CHECK (scope IN ('account', 'workspace', 'organization')),
    -- Set for workspace scope only.
    workspace_id  bigint REFERENCES workspaces (id) ON DELETE CASCADE,
    -- Set for account scope only: the one user whose calls use it.
    user_id       bigint REFERENCES users (id) ON DELETE CASCADE,
    -- Type and non-secret parameters: header, scheme, in, name, username.
    auth          jsonb NOT NULL,
    key_id        text NOT NULL,
    nonce         bytea NOT NULL CHECK (length(nonce) = 12),
    ciphertext    bytea NOT NULL,
    hint          text NOT NULL DEFAULT '',
    created_by    bigint REFERENCES users (id) ON DELETE SET NULL,
    updated_by    bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    CHECK ((scope = 'workspace') = (workspace_id IS NOT NULL)),
    CHECK ((scope = 'account') = (user_id IS NOT NULL))
);
-- One credential per source and holder: the user, the workspace or the organization.
CREATE UNIQUE INDEX credentials_holder_key ON credentials (source_id, scope, workspace_id, user_id) NULLS NOT DISTINCT;
CREATE INDEX credentials_org_idx ON credentials (org_id, scope);
CREATE INDEX credentials_user_idx ON credentials (user_id) WHERE user_id IS NOT NULL;
-- keys rotate walks the values not under the current key.
CREATE INDEX credentials_key_idx ON credentials (key_id);

-- Who did what to an organization's configuration. Details never hold a secret.
CREATE TABLE audit_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id        bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id  bigint REFERENCES workspaces (id) ON DELETE SET NULL,
    actor_id      bigint REFERENCES users (id) ON DELETE SET NULL,
    action        text NOT NULL,
    target_type   text NOT NULL,
    target_id     text NOT NULL,
    details       jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_org_idx ON audit_events (org_id, created_at DESC);

-- +goose Down
DROP TABLE audit_events;
DROP TABLE credentials;
