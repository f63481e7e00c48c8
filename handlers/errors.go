package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/errorpage"
	"github.com/toolgate/toolgate/views/ui"
)

// apiError is the body of every JSON error: {"error": {...}}.
type apiError struct {
	Status  int               `json:"-"`
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// classify maps an error onto a status, a stable code and a message safe to
// show. Anything unknown is a 500 whose details stay in the log.
func classify(err error) apiError {
	var (
		fields    validation.Errors
		throttled *auth.ThrottledError
		httpErr   *echo.HTTPError
		syntax    *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		maxBytes  *http.MaxBytesError
		decision  *approvals.DecisionError
	)
	switch {
	case errors.As(err, &fields):
		return apiError{http.StatusUnprocessableEntity, "invalid", "Some fields are not valid.", fields}
	case errors.As(err, &decision):
		return apiError{Status: decision.HTTPStatus(), Code: decision.Code, Message: decision.Message}
	case errors.Is(err, db.ErrNotFound):
		return apiError{Status: http.StatusNotFound, Code: "not_found", Message: "Not found."}
	case errors.Is(err, tenancy.ErrInvitationInvalid):
		return apiError{Status: http.StatusNotFound, Code: "invitation_invalid", Message: tenancy.ErrInvitationInvalid.Error()}
	case errors.Is(err, tenancy.ErrLastOwner):
		return apiError{Status: http.StatusConflict, Code: "last_owner", Message: tenancy.ErrLastOwner.Error()}
	case errors.Is(err, tenancy.ErrAlreadyMember):
		return apiError{Status: http.StatusConflict, Code: "already_member", Message: tenancy.ErrAlreadyMember.Error()}
	case errors.Is(err, db.ErrConflict):
		return apiError{Status: http.StatusConflict, Code: "conflict", Message: "That already exists."}
	case errors.Is(err, auth.ErrUnauthenticated):
		return apiError{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: auth.ErrUnauthenticated.Error()}
	case errors.Is(err, auth.ErrForbidden):
		return apiError{Status: http.StatusForbidden, Code: "forbidden", Message: auth.ErrForbidden.Error()}
	case errors.Is(err, tenancy.ErrInvitationOtherEmail):
		return apiError{Status: http.StatusForbidden, Code: "invitation_other_email", Message: tenancy.ErrInvitationOtherEmail.Error()}
	case errors.Is(err, tenancy.ErrSignupClosed):
		return apiError{Status: http.StatusForbidden, Code: "signup_closed", Message: tenancy.ErrSignupClosed.Error()}
	case errors.Is(err, errCSRF):
		return apiError{Status: http.StatusForbidden, Code: "csrf", Message: errCSRF.Error()}
	case errors.As(err, &throttled):
		return apiError{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: throttled.Error()}
	case errors.As(err, &maxBytes):
		return apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: fmt.Sprintf("The request is larger than the %d MiB limit.", maxBytes.Limit>>20)}
	case errors.As(err, &syntax), errors.As(err, &typeErr), errors.Is(err, errBadJSON):
		return apiError{Status: http.StatusBadRequest, Code: "bad_request", Message: "The request body is not valid JSON for this endpoint: " + err.Error()}
	case errors.As(err, &httpErr):
		msg := http.StatusText(httpErr.Code)
		if m, ok := httpErr.Message.(string); ok && httpErr.Code < 500 {
			msg = m
		}
		return apiError{Status: httpErr.Code, Code: codeFor(httpErr.Code), Message: msg}
	}
	return apiError{Status: http.StatusInternalServerError, Code: "internal", Message: "Something went wrong on our side; the error was logged."}
}

func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	}
	return "error_" + strconv.Itoa(status)
}

// handleError is Echo's one error handler: JSON for /api/v1, an alert
// fragment for htmx, a full error page for browsers.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := classify(err)
	if ae.Status >= 500 {
		s.logOf(c).Error("request failed", "error", err)
	}
	var throttled *auth.ThrottledError
	if errors.As(err, &throttled) {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(throttled.RetryAfter.Seconds())))
	}
	if ae.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="toolgate"`)
	}
	var werr error
	switch {
	case isAPI(c):
		werr = c.JSON(ae.Status, map[string]apiError{"error": ae})
	case isHTMX(c):
		c.Response().Header().Set("HX-Retarget", "#alerts")
		c.Response().Header().Set("HX-Reswap", "innerHTML")
		werr = render(c, ae.Status, ui.Alert("error", ae.Message))
	default:
		werr = s.errorPage(c, ae)
	}
	if werr != nil {
		s.logOf(c).Error("write error response", "error", werr)
	}
}

func (s *Server) errorPage(c echo.Context, ae apiError) error {
	m, err := s.meta(c, http.StatusText(ae.Status), "")
	if err != nil {
		s.logOf(c).Error("error page frame", "error", err)
	}
	p := errorpage.Page{Meta: m, Status: ae.Status, Title: http.StatusText(ae.Status), Message: ae.Message}
	switch ae.Status {
	case http.StatusNotFound:
		p.Title, p.Message = "Page not found", "There is nothing here, or you do not have access to it."
	case http.StatusForbidden:
		p.Title = "Not allowed"
	case http.StatusInternalServerError:
		p.Title = "Something went wrong"
	}
	return render(c, ae.Status, errorpage.Show(p))
}
