-- +goose Up
-- A tool row averages about 5 KB (schemas, description), over the default
-- 2 KB at which PostgreSQL moves values out of line, so the fallback search
-- fetched every tool's tsv from the TOAST table: about 18,000 buffer reads
-- for one workspace of 3,669 tools. Keeping rows up to a page inline makes
-- that scan read the heap alone (EXPLAIN: 19 ms to 8 ms).
ALTER TABLE source_tools SET (toast_tuple_target = 8160);

-- +goose Down
ALTER TABLE source_tools RESET (toast_tuple_target);
