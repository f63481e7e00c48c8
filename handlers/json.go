package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"
)

// errBadJSON marks a body that does not decode into the endpoint's shape.
var errBadJSON = errors.New("invalid JSON body")

// decodeJSON reads a JSON object into v, refusing unknown fields and
// trailing data, so a typo in a field name is an error rather than ignored.
func decodeJSON(c echo.Context, v any) error {
	if ct := c.Request().Header.Get(echo.HeaderContentType); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != echo.MIMEApplicationJSON {
			return echo.NewHTTPError(http.StatusUnsupportedMediaType, "send Content-Type: application/json")
		}
	}
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: the body is empty", errBadJSON)
		}
		return fmt.Errorf("%w: %w", errBadJSON, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: unexpected data after the JSON object", errBadJSON)
	}
	return nil
}

// list wraps a collection as {"data": [...]}.
func list[T any](items []T) map[string][]T {
	if items == nil {
		items = []T{}
	}
	return map[string][]T{"data": items}
}
