package db

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// InsertToolCallsTx runs InsertToolCalls' statement inside tx, so a test
// can hold the locks it takes.
func InsertToolCallsTx(ctx context.Context, tx pgx.Tx, calls []NewToolCall) (int64, error) {
	tag, err := tx.Exec(ctx, insertToolCalls, toolCallColumns(calls)...)
	return tag.RowsAffected(), err
}
