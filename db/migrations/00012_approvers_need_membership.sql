-- +goose Up
-- An approver is a member of the workspace's organization: leaving the
-- organization ends the role, so someone removed and later invited back
-- does not silently decide approvals again.
DELETE FROM workspace_approvers a
    WHERE NOT EXISTS (SELECT 1 FROM memberships m WHERE m.org_id = a.org_id AND m.user_id = a.user_id);
ALTER TABLE workspace_approvers ADD CONSTRAINT workspace_approvers_membership_fkey
    FOREIGN KEY (org_id, user_id) REFERENCES memberships (org_id, user_id) ON DELETE CASCADE;

-- +goose Down
ALTER TABLE workspace_approvers DROP CONSTRAINT workspace_approvers_membership_fkey;
