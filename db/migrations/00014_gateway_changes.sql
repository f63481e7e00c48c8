-- +goose Up

-- 1. Replicas keep recent tool lookups (db.Store.CallTool: a tool, its
-- source, the caller's credential and the policy versions) in memory. Every
-- change that can alter a lookup announces its organization's id on the
-- channel toolgate_gateway, in the changing transaction, so every replica
-- that LISTENs drops that organization's lookups as the change commits:
-- a source added, edited, enabled, disabled, rediscovered or deleted; its
-- tools rewritten; a credential of any scope added, changed, re-sealed or
-- deleted; a policy written (it bumps policy_version); a workspace or an
-- organization deleted (its rows cascade, and announce too). What a lookup
-- does not read stays quiet: a source's refresh state and a credential's
-- last use. Identical announcements of one transaction arrive once.
-- +goose StatementBegin
CREATE FUNCTION notify_gateway_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('toolgate_gateway', CAST(OLD.org_id AS text));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('toolgate_gateway', CAST(NEW.org_id AS text));
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Sources: any change but the worker's bookkeeping of a refresh. A column
-- added later announces by default.
CREATE TRIGGER sources_gateway_insert_delete
    AFTER INSERT OR DELETE ON sources
    FOR EACH ROW EXECUTE FUNCTION notify_gateway_change();
CREATE TRIGGER sources_gateway_update
    AFTER UPDATE ON sources
    FOR EACH ROW
    WHEN ((to_jsonb(OLD) - '{state,error,warnings,spec_hash,etag,server,auth_profile,quality,discovery_ms,index_error,indexed_generation,last_refreshed_at,last_success_at,last_failure_at,refresh_requested_at}'::text[])
        IS DISTINCT FROM (to_jsonb(NEW) - '{state,error,warnings,spec_hash,etag,server,auth_profile,quality,discovery_ms,index_error,indexed_generation,last_refreshed_at,last_success_at,last_failure_at,refresh_requested_at}'::text[]))
    EXECUTE FUNCTION notify_gateway_change();

-- Credentials: any change but a use being recorded.
CREATE TRIGGER credentials_gateway_insert_delete
    AFTER INSERT OR DELETE ON credentials
    FOR EACH ROW EXECUTE FUNCTION notify_gateway_change();
CREATE TRIGGER credentials_gateway_update
    AFTER UPDATE ON credentials
    FOR EACH ROW
    WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
    EXECUTE FUNCTION notify_gateway_change();

-- Workspaces: a policy written at the workspace level, or the workspace gone.
CREATE TRIGGER workspaces_gateway_update
    AFTER UPDATE ON workspaces
    FOR EACH ROW
    WHEN (OLD.policy_version IS DISTINCT FROM NEW.policy_version OR OLD.org_id IS DISTINCT FROM NEW.org_id)
    EXECUTE FUNCTION notify_gateway_change();
CREATE TRIGGER workspaces_gateway_delete
    AFTER DELETE ON workspaces
    FOR EACH ROW EXECUTE FUNCTION notify_gateway_change();

-- Organizations carry their own id.
-- +goose StatementBegin
CREATE FUNCTION notify_gateway_org_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('toolgate_gateway', CAST(OLD.id AS text));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER organizations_gateway_update
    AFTER UPDATE ON organizations
    FOR EACH ROW
    WHEN (OLD.policy_version IS DISTINCT FROM NEW.policy_version)
    EXECUTE FUNCTION notify_gateway_org_change();
CREATE TRIGGER organizations_gateway_delete
    AFTER DELETE ON organizations
    FOR EACH ROW EXECUTE FUNCTION notify_gateway_org_change();

-- Tools: discovery deletes a source's tools and COPYs thousands back, so
-- these fire once per statement and announce each organization once,
-- through the sources the statement touched. Tools deleted with their
-- source find no source row any more; the source's own trigger announces.
-- +goose StatementBegin
CREATE FUNCTION notify_gateway_tools_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('toolgate_gateway', CAST(o.org_id AS text))
        FROM (SELECT DISTINCT s.org_id FROM sources s WHERE s.id IN (SELECT source_id FROM old_tools)) o;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('toolgate_gateway', CAST(o.org_id AS text))
        FROM (SELECT DISTINCT s.org_id FROM sources s WHERE s.id IN (SELECT source_id FROM new_tools)) o;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER source_tools_gateway_insert
    AFTER INSERT ON source_tools REFERENCING NEW TABLE AS new_tools
    FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_tools_change();
CREATE TRIGGER source_tools_gateway_update
    AFTER UPDATE ON source_tools REFERENCING OLD TABLE AS old_tools NEW TABLE AS new_tools
    FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_tools_change();
CREATE TRIGGER source_tools_gateway_delete
    AFTER DELETE ON source_tools REFERENCING OLD TABLE AS old_tools
    FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_tools_change();

-- 2. Audit rows without per-row foreign key checks. Each of the four
-- references ran a locking lookup of its parent for every inserted row,
-- more than half of what writing a call cost PostgreSQL. The recorder's
-- insert (db.Store.InsertToolCalls, the only writer) now locks each parent
-- once per batch (FOR KEY SHARE, as the checks did), skips the rows of a
-- workspace gone and leaves out a key or a user gone; these triggers do
-- what the references' actions did when a parent is deleted. A deletion
-- waits for a batch that locked its row, and then sees that batch's rows.
-- A row's organization is its workspace's (the insert checks it), so an
-- organization's rows go with its workspaces, and tool_calls_org_idx,
-- which only served that cascade, goes.
ALTER TABLE tool_calls
    DROP CONSTRAINT tool_calls_org_id_fkey,
    DROP CONSTRAINT tool_calls_workspace_id_fkey,
    DROP CONSTRAINT tool_calls_key_id_fkey,
    DROP CONSTRAINT tool_calls_user_id_fkey;
DROP INDEX tool_calls_org_idx;

-- +goose StatementBegin
CREATE FUNCTION tool_calls_workspaces_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tool_calls WHERE workspace_id IN (SELECT id FROM gone);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER workspaces_delete_tool_calls
    AFTER DELETE ON workspaces REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION tool_calls_workspaces_deleted();

-- +goose StatementBegin
CREATE FUNCTION tool_calls_keys_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tool_calls SET key_id = NULL WHERE key_id IN (SELECT id FROM gone);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER api_keys_null_tool_calls
    AFTER DELETE ON api_keys REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION tool_calls_keys_deleted();

-- +goose StatementBegin
CREATE FUNCTION tool_calls_users_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tool_calls SET user_id = NULL WHERE user_id IN (SELECT id FROM gone);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER users_null_tool_calls
    AFTER DELETE ON users REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION tool_calls_users_deleted();

-- +goose Down
DROP TRIGGER users_null_tool_calls ON users;
DROP FUNCTION tool_calls_users_deleted();
DROP TRIGGER api_keys_null_tool_calls ON api_keys;
DROP FUNCTION tool_calls_keys_deleted();
DROP TRIGGER workspaces_delete_tool_calls ON workspaces;
DROP FUNCTION tool_calls_workspaces_deleted();
CREATE INDEX tool_calls_org_idx ON tool_calls (org_id);
ALTER TABLE tool_calls
    ADD CONSTRAINT tool_calls_org_id_fkey FOREIGN KEY (org_id) REFERENCES organizations (id) ON DELETE CASCADE,
    ADD CONSTRAINT tool_calls_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE,
    ADD CONSTRAINT tool_calls_key_id_fkey FOREIGN KEY (key_id) REFERENCES api_keys (id) ON DELETE SET NULL,
    ADD CONSTRAINT tool_calls_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE SET NULL;

DROP TRIGGER source_tools_gateway_delete ON source_tools;
DROP TRIGGER source_tools_gateway_update ON source_tools;
DROP TRIGGER source_tools_gateway_insert ON source_tools;
DROP FUNCTION notify_gateway_tools_change();
DROP TRIGGER organizations_gateway_delete ON organizations;
DROP TRIGGER organizations_gateway_update ON organizations;
DROP FUNCTION notify_gateway_org_change();
DROP TRIGGER workspaces_gateway_delete ON workspaces;
DROP TRIGGER workspaces_gateway_update ON workspaces;
DROP TRIGGER credentials_gateway_update ON credentials;
DROP TRIGGER credentials_gateway_insert_delete ON credentials;
DROP TRIGGER sources_gateway_update ON sources;
DROP TRIGGER sources_gateway_insert_delete ON sources;
DROP FUNCTION notify_gateway_change();
