-- +goose Up
-- The audit recorder (internal/gateway/audit) gives each row a key before
-- its first insert and keeps it across retries. An insert whose commit was
-- never acknowledged (a timeout, a connection lost on the way back) is sent
-- again, and the rows it did write are then not written twice: the retry
-- skips a key the table already holds (first attempts do not look). NULL
-- for rows written before.
ALTER TABLE tool_calls ADD COLUMN record_key uuid;
CREATE UNIQUE INDEX tool_calls_record_key_idx ON tool_calls (record_key);

-- +goose Down
DROP INDEX tool_calls_record_key_idx;
ALTER TABLE tool_calls DROP COLUMN record_key;
