-- +goose Up
-- Requests still open: pending ones, and approved ones nobody has run yet
-- (both expire at expires_at). The sweep reads them across tenants by
-- expiry; a workspace's list expires its own by (org, workspace).
DROP INDEX approvals_pending_idx;
CREATE INDEX approvals_open_idx ON approvals (expires_at) WHERE status IN ('pending', 'approved');
CREATE INDEX approvals_open_workspace_idx ON approvals (org_id, workspace_id, expires_at) WHERE status IN ('pending', 'approved');

-- +goose Down
DROP INDEX approvals_open_workspace_idx;
DROP INDEX approvals_open_idx;
CREATE INDEX approvals_pending_idx ON approvals (org_id, expires_at) WHERE status = 'pending';
