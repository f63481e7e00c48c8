-- +goose Up
CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    email         text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    name          text NOT NULL DEFAULT '' CHECK (length(name) <= 100),
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE organizations (
    id         bigserial PRIMARY KEY,
    slug       text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$'),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);


CREATE TABLE memberships (
    org_id     bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE invitations (
    id          bigserial PRIMARY KEY,
    org_id      bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email       text NOT NULL,
    role        text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    token_hash  bytea NOT NULL UNIQUE,
    invited_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by bigint REFERENCES users (id) ON DELETE SET NULL,
    revoked_at  timestamptz
);
CREATE INDEX invitations_org_idx ON invitations (org_id, created_at DESC);

CREATE TABLE workspaces (
    id         bigserial PRIMARY KEY,
    org_id     bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    slug       text NOT NULL CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$'),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, slug)
);
CREATE UNIQUE INDEX workspaces_name_key ON workspaces (org_id, lower(name));

CREATE TABLE personal_access_tokens (
    id           bigserial PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    prefix       text NOT NULL,
    token_hash   bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX personal_access_tokens_user_idx ON personal_access_tokens (user_id, created_at DESC);

-- Failed sign-ins, kept in PostgreSQL so throttling holds across replicas.
CREATE TABLE signin_failures (
    id        bigserial PRIMARY KEY,
    email     text NOT NULL,
    client_ip text NOT NULL,
    failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX signin_failures_email_idx ON signin_failures (email, failed_at);
CREATE INDEX signin_failures_ip_idx ON signin_failures (client_ip, failed_at);

-- Console sessions (scs pgxstore).
CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

-- +goose Down
DROP TABLE sessions;
DROP TABLE signin_failures;
DROP TABLE personal_access_tokens;
DROP TABLE workspaces;
DROP TABLE invitations;
DROP TABLE memberships;
DROP TABLE organizations;
DROP TABLE users;
