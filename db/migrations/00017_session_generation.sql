-- +goose Up
-- A console session remembers the generation its user was at when it began;
-- raising the generation ends every session begun before (a password change
-- does, keeping only the session that made it).
ALTER TABLE users ADD COLUMN session_generation bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE users DROP COLUMN session_generation;
