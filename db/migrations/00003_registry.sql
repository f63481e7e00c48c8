-- +goose Up
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- A source's tool set is versioned: generation counts successful writes,
-- indexed_generation is the one Meilisearch holds, signature decides whether
-- a refresh changes anything.
ALTER TABLE sources
    ADD COLUMN generation         bigint NOT NULL DEFAULT 0,
    ADD COLUMN indexed_generation bigint NOT NULL DEFAULT 0,
    ADD COLUMN signature          text NOT NULL DEFAULT '',
    ADD COLUMN index_error        text NOT NULL DEFAULT '',
    -- When a refresh was last asked for: a running refresh that started
    -- before it refreshes again instead of finishing.
    ADD COLUMN refresh_requested_at timestamptz;

-- search_text holds the path, name, aliases and parameter names split into
-- words, for the PostgreSQL fallback search; doc_hash detects changed documents.
ALTER TABLE source_tools
    ADD COLUMN search_text text NOT NULL DEFAULT '',
    ADD COLUMN params      text[] NOT NULL DEFAULT '{}',
    ADD COLUMN doc_hash    text NOT NULL DEFAULT '',
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', search_text), 'A') ||
        setweight(to_tsvector('english', description), 'B')) STORED;
CREATE INDEX source_tools_tsv_idx ON source_tools USING gin (tsv);
CREATE INDEX source_tools_trgm_idx ON source_tools USING gin (search_text gin_trgm_ops);

-- +goose Down
DROP INDEX source_tools_trgm_idx;
DROP INDEX source_tools_tsv_idx;
ALTER TABLE source_tools DROP COLUMN tsv, DROP COLUMN doc_hash, DROP COLUMN params, DROP COLUMN search_text;
ALTER TABLE sources DROP COLUMN refresh_requested_at, DROP COLUMN index_error, DROP COLUMN signature, DROP COLUMN indexed_generation, DROP COLUMN generation;
