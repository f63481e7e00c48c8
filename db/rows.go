package db

import (
	"database/sql"

	"github.com/jackc/pgx/v5/pgtype"
)

// oneRow turns an Exec result that touched no row into ErrNotFound.
func oneRow(res sql.Result, err error) error {
	if err != nil {
		return translate(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// Strings scans a PostgreSQL text[] through database/sql.
type Strings []string

// Scan implements sql.Scanner with pgx's array codec.
func (s *Strings) Scan(src any) error {
	return pgtype.NewMap().SQLScanner((*[]string)(s)).Scan(src)
}
