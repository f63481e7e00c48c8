-- +goose Up
-- The fallback search reads tsv for every candidate tool; stored compressed,
-- decompressing it dominated a broad query. EXTERNAL keeps it uncompressed
-- (and out of line only when a row outgrows a page, unlike PLAIN).
ALTER TABLE source_tools ALTER COLUMN tsv SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE source_tools ALTER COLUMN tsv SET STORAGE EXTENDED;
