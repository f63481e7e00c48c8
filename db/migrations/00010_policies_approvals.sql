-- +goose Up
-- Policies (internal/policy): ordered rules per organization and per
-- workspace that allow, deny or hold a tool call for a person's approval.
CREATE TABLE policies (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id              bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    -- NULL: an organization rule, binding every workspace.
    workspace_id        bigint REFERENCES workspaces (id) ON DELETE CASCADE,
    -- Whom the rule targets: everyone, a role, a user or an API key.
    target_type         text NOT NULL CHECK (target_type IN ('everyone', 'role', 'user', 'key')),
    target_role         text CHECK (target_role IN ('owner', 'admin', 'member', 'viewer')),
    target_user_id      bigint REFERENCES users (id) ON DELETE CASCADE,
    target_key_id       bigint REFERENCES api_keys (id) ON DELETE CASCADE,
    -- What it selects: all tools, a source, a namespace, or a path pattern
    -- (`*` one segment, `**` any depth). selector holds the source id,
    -- the namespace or the pattern; empty for all.
    selector_type       text NOT NULL CHECK (selector_type IN ('all', 'source', 'namespace', 'pattern')),
    selector            text NOT NULL DEFAULT '' CHECK (length(selector) <= 300),
    -- A CEL expression over args, tool, caller and now; empty matches always.
    condition           text NOT NULL DEFAULT '' CHECK (length(condition) <= 4000),
    effect              text NOT NULL CHECK (effect IN ('allow', 'require_approval', 'deny')),
    -- Ordering within the level: the first matching rule decides.
    position            integer NOT NULL,
    enabled             boolean NOT NULL DEFAULT true,
    note                text NOT NULL DEFAULT '' CHECK (length(note) <= 500),
    -- For require_approval: how long a request waits for a decision, and
    -- whether the caller may decide on their own request.
    approval_ttl_seconds integer NOT NULL DEFAULT 600 CHECK (approval_ttl_seconds BETWEEN 60 AND 604800),
    allow_self_approval boolean NOT NULL DEFAULT false,
    created_by          bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK ((target_type = 'role') = (target_role IS NOT NULL)),
    CHECK ((target_type = 'user') = (target_user_id IS NOT NULL)),
    CHECK ((target_type = 'key') = (target_key_id IS NOT NULL)),
    CHECK ((selector_type = 'all') = (selector = ''))
);
CREATE INDEX policies_level_idx ON policies (org_id, workspace_id, position);

-- Bumped on every change to a level's rules, so a replica's compiled rule
-- cache knows, from the row the call's lookup already reads, when to reload.
ALTER TABLE organizations ADD COLUMN policy_version bigint NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN policy_version bigint NOT NULL DEFAULT 0;

-- A source may override its tools' default approval: NULL keeps each
-- tool's own default (auto or required).
ALTER TABLE sources ADD COLUMN approval_override text CHECK (approval_override IN ('auto', 'required'));

-- Members who may decide approvals in one workspace, beside the
-- organization's owners and admins.
CREATE TABLE workspace_approvers (
    workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id       bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    added_by     bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_approvers_user_idx ON workspace_approvers (user_id);

-- A call held for a person (internal/approvals). The arguments are kept
-- intact but sealed with the credentials' key ring (AES-256-GCM, the id as
-- associated data) so the approved call runs with exactly them; pages show
-- arguments_redacted. The result of the one execution is sealed the same
-- way, so whichever session, replica or retry asks gets it.
CREATE TABLE approvals (
    id                 text PRIMARY KEY,
    org_id             bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id       bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    tool               text NOT NULL,
    source_id          text NOT NULL DEFAULT '',
    arguments_sealed   bytea NOT NULL,
    arguments_nonce    bytea NOT NULL,
    arguments_key_id   text NOT NULL,
    arguments_redacted jsonb NOT NULL DEFAULT '{}',
    -- The caller: the key and its owner, or the console user.
    key_id             bigint REFERENCES api_keys (id) ON DELETE SET NULL,
    user_id            bigint REFERENCES users (id) ON DELETE SET NULL,
    via                text NOT NULL,
    -- The rule that held the call; NULL when the tool's default did.
    policy_id          bigint REFERENCES policies (id) ON DELETE SET NULL,
    reason             text NOT NULL DEFAULT '',
    allow_self_approval boolean NOT NULL DEFAULT false,
    status             text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'executing', 'executed')),
    requested_at       timestamptz NOT NULL DEFAULT now(),
    expires_at         timestamptz NOT NULL,
    decided_at         timestamptz,
    decided_by         bigint REFERENCES users (id) ON DELETE SET NULL,
    comment            text NOT NULL DEFAULT '' CHECK (length(comment) <= 1000),
    executed_at        timestamptz,
    result_sealed      bytea,
    result_nonce       bytea,
    result_key_id      text,
    CHECK (expires_at > requested_at)
);
CREATE INDEX approvals_workspace_idx ON approvals (workspace_id, requested_at DESC);
CREATE INDEX approvals_pending_idx ON approvals (org_id, expires_at) WHERE status = 'pending';

-- Calls held for approval and then settled leave their own audit rows.
ALTER TABLE tool_calls DROP CONSTRAINT tool_calls_outcome_check;
ALTER TABLE tool_calls ADD CONSTRAINT tool_calls_outcome_check
    CHECK (outcome IN ('ok', 'error', 'timeout', 'invalid', 'not_found', 'denied', 'pending', 'expired'));
ALTER TABLE tool_calls ADD COLUMN approval_id text;

-- +goose Down
ALTER TABLE tool_calls DROP COLUMN approval_id;
DELETE FROM tool_calls WHERE outcome IN ('pending', 'expired');
ALTER TABLE tool_calls DROP CONSTRAINT tool_calls_outcome_check;
ALTER TABLE tool_calls ADD CONSTRAINT tool_calls_outcome_check
    CHECK (outcome IN ('ok', 'error', 'timeout', 'invalid', 'not_found', 'denied'));
DROP TABLE approvals;
DROP TABLE workspace_approvers;
ALTER TABLE sources DROP COLUMN approval_override;
ALTER TABLE workspaces DROP COLUMN policy_version;
ALTER TABLE organizations DROP COLUMN policy_version;
DROP TABLE policies;
