package db

import "database/sql"

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
