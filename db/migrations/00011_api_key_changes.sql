-- +goose Up
-- Replicas cache what an API key grants for a few seconds. Every change that
-- can end or alter a grant announces the key's id on the channel
-- toolgate_api_keys, in the changing transaction, so every replica that
-- LISTENs drops its copy as the change commits: a key revoked, expired early,
-- re-pointed or deleted (also by a workspace, organization or user deleted
-- with it), and its owner's membership changed or ended. last_used_at alone
-- is not a change.
-- +goose StatementBegin
CREATE FUNCTION notify_api_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('toolgate_api_keys', CAST(OLD.id AS text));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER api_keys_changed
    AFTER UPDATE OF org_id, workspace_id, user_id, key_hash, mode, expires_at, revoked_at OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION notify_api_key_change();

-- +goose StatementBegin
CREATE FUNCTION notify_membership_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('toolgate_api_keys', CAST(k.id AS text))
        FROM api_keys k
        WHERE k.org_id = OLD.org_id AND k.user_id = OLD.user_id AND k.revoked_at IS NULL;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER memberships_changed
    AFTER UPDATE OF org_id, user_id, role OR DELETE ON memberships
    FOR EACH ROW EXECUTE FUNCTION notify_membership_change();

-- +goose Down
DROP TRIGGER memberships_changed ON memberships;
DROP FUNCTION notify_membership_change();
DROP TRIGGER api_keys_changed ON api_keys;
DROP FUNCTION notify_api_key_change();
