-- +goose Up
-- The console's Audit log pages an organization's events newest first, by
-- id; a category filter reads the action's prefix (credential., api_key.).
CREATE INDEX audit_events_org_id_idx ON audit_events (org_id, id DESC);

-- +goose Down
DROP INDEX audit_events_org_id_idx;
