package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/validation"
	"github.com/toolgate/toolgate/views/account"
	"github.com/toolgate/toolgate/views/paths"
)

// Session key of the organization last opened, for "/".
const sessionOrgKey = "org"

// home opens the organization last used, or the first one.
func (s *Server) home(c echo.Context) error {
	ctx := c.Request().Context()
	orgs, err := s.store.OrganizationsOf(ctx, mustUser(c).ID)
	if err != nil {
		return err
	}
	if len(orgs) == 0 {
		return c.Redirect(http.StatusSeeOther, paths.Orgs)
	}
	last := s.sessions.GetString(ctx, sessionOrgKey)
	for _, o := range orgs {
		if o.Slug == last {
			return c.Redirect(http.StatusSeeOther, paths.Org(o.Slug))
		}
	}
	return c.Redirect(http.StatusSeeOther, paths.Org(orgs[0].Slug))
}

func (s *Server) signInPage(c echo.Context) error {
	if _, ok := userOf(c); ok {
		return c.Redirect(http.StatusSeeOther, localPath(c.QueryParam("next")))
	}
	mode, err := s.tenancy.SignUpMode(c.Request().Context())
	if err != nil {
		return err
	}
	if mode == "first" {
		return c.Redirect(http.StatusSeeOther, paths.SignUp)
	}
	return s.renderSignIn(c, http.StatusOK, account.SignInPage{Next: c.QueryParam("next"), CanSignUp: mode == tenancy.SignupOpen})
}

func (s *Server) renderSignIn(c echo.Context, status int, p account.SignInPage) error {
	m, err := s.meta(c, "Sign in", "")
	if err != nil {
		return err
	}
	p.Meta = m
	return render(c, status, account.SignIn(p))
}

// signIn checks the password, renews the session token and opens the page
// the person came for.
func (s *Server) signIn(c echo.Context) error {
	email, password, next := strings.TrimSpace(c.FormValue("email")), c.FormValue("password"), c.FormValue("next")
	u, err := s.auth.SignIn(c.Request().Context(), email, password, c.RealIP())
	var throttled *auth.ThrottledError
	switch {
	case errors.Is(err, auth.ErrBadCredentials):
		return s.renderSignIn(c, http.StatusUnauthorized, account.SignInPage{Email: email, Next: next, Error: "Wrong email or password."})
	case errors.As(err, &throttled):
		c.Response().Header().Set("Retry-After", "900")
		return s.renderSignIn(c, http.StatusTooManyRequests, account.SignInPage{Email: email, Next: next, Error: "Too many failed sign-ins. Wait 15 minutes and try again."})
	case err != nil:
		return err
	}
	if err := s.startSession(c, u); err != nil {
		return err
	}
	return s.seeOther(c, localPath(next))
}

// startSession renews the session token (against fixation) and signs u in.
func (s *Server) startSession(c echo.Context, u db.User) error {
	ctx := c.Request().Context()
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionUserKey, u.ID)
	s.sessions.Put(ctx, sessionGenerationKey, u.SessionGeneration)
	c.Set(ctxUser, u)
	return nil
}

// keepSession moves the request's session, when it is u's, to u's new
// session generation after the others were ended, with a new token and
// its deadline unchanged. A request authenticated by a token keeps no
// session, even with a cookie beside the token.
func (s *Server) keepSession(c echo.Context, u db.User, generation int64) error {
	ctx := c.Request().Context()
	if viaToken(c) || !hasSession(c) || s.sessions.GetInt64(ctx, sessionUserKey) != u.ID {
		return nil
	}
	if err := s.sessions.KeepDeadline(ctx); err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionGenerationKey, generation)
	return nil
}

func (s *Server) signOut(c echo.Context) error {
	if err := s.sessions.Destroy(c.Request().Context()); err != nil {
		return err
	}
	return s.seeOther(c, paths.SignIn)
}

func (s *Server) signUpPage(c echo.Context) error {
	p := account.SignUpPage{}
	if err := s.prepareSignUp(c, &p, c.QueryParam("invite")); err != nil {
		return err
	}
	if p.Invite != nil {
		p.Email = p.Invite.Email
	}
	return s.renderSignUp(c, http.StatusOK, p)
}

// prepareSignUp decides what the sign-up page offers.
func (s *Server) prepareSignUp(c echo.Context, p *account.SignUpPage, invite string) error {
	ctx := c.Request().Context()
	mode, err := s.tenancy.SignUpMode(ctx)
	if err != nil {
		return err
	}
	p.Mode = mode
	if invite != "" && mode != "first" && mode != tenancy.SignupClosed {
		inv, err := s.tenancy.PendingInvitation(ctx, invite)
		if err != nil {
			p.Error = err.Error()
		} else {
			p.Mode = "invited"
			p.Invite = &account.InviteInfo{Token: invite, OrgName: inv.OrgName, Email: inv.Email, Role: inv.Role}
		}
	}
	switch p.Mode {
	case tenancy.SignupInvite:
		p.Mode = tenancy.SignupClosed
		if p.Error == "" {
			p.Error = "Accounts are created by invitation: ask an admin of your organization for an invitation link."
		}
	case tenancy.SignupClosed:
		p.Error = "This instance does not take new accounts. Ask its administrator to create one for you."
	}
	return nil
}

func (s *Server) renderSignUp(c echo.Context, status int, p account.SignUpPage) error {
	m, err := s.meta(c, "Sign up", "")
	if err != nil {
		return err
	}
	p.Meta = m
	return render(c, status, account.SignUp(p))
}

func (s *Server) signUp(c echo.Context) error {
	in := tenancy.SignUpInput{
		Email: c.FormValue("email"), Name: c.FormValue("name"), Password: c.FormValue("password"),
		OrgName: c.FormValue("org_name"), Invite: c.FormValue("invite"),
	}
	u, orgSlug, err := s.tenancy.SignUp(c.Request().Context(), in)
	var problems validation.Errors
	if errors.As(err, &problems) || errors.Is(err, tenancy.ErrInvitationInvalid) || errors.Is(err, tenancy.ErrSignupClosed) {
		p := account.SignUpPage{Email: strings.TrimSpace(in.Email), Name: strings.TrimSpace(in.Name), OrgName: strings.TrimSpace(in.OrgName), Errors: problems}
		if perr := s.prepareSignUp(c, &p, in.Invite); perr != nil {
			return perr
		}
		if problems == nil && p.Error == "" {
			p.Error = err.Error()
		}
		status := http.StatusUnprocessableEntity
		if errors.Is(err, tenancy.ErrSignupClosed) {
			status = http.StatusForbidden
		}
		return s.renderSignUp(c, status, p)
	}
	if err != nil {
		return err
	}
	if err := s.startSession(c, u); err != nil {
		return err
	}
	welcome := "Welcome to toolgate."
	if in.Invite != "" {
		if org, err := s.store.OrganizationOf(c.Request().Context(), u.ID, orgSlug); err == nil {
			welcome = "Welcome to toolgate. You joined " + org.Name + "."
		}
	}
	s.flash(c, "success", welcome)
	return s.seeOther(c, paths.Org(orgSlug))
}

// invitationPage shows an invitation: to accept when signed in, else to sign
// up or sign in first.
func (s *Server) invitationPage(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	inv, err := s.tenancy.PendingInvitation(ctx, token)
	u, signedIn := userOf(c)
	if !signedIn {
		if err != nil {
			return err
		}
		if _, err := s.store.UserByEmail(ctx, inv.Email); err == nil {
			s.flash(c, "info", "Sign in as "+inv.Email+" to join "+inv.OrgName+".")
			return c.Redirect(http.StatusSeeOther, paths.WithNext(paths.SignIn, paths.Invitation(token)))
		}
		return c.Redirect(http.StatusSeeOther, paths.SignUp+"?invite="+token)
	}
	p := account.AcceptPage{}
	if err != nil {
		p.Error = err.Error()
	} else {
		p.Invite = account.InviteInfo{Token: token, OrgName: inv.OrgName, Email: inv.Email, Role: inv.Role}
		if !strings.EqualFold(inv.Email, u.Email) {
			p.Error = tenancy.ErrInvitationOtherEmail.Error()
		}
	}
	m, merr := s.meta(c, "Invitation", "")
	if merr != nil {
		return merr
	}
	p.Meta = m
	status := http.StatusOK
	if p.Error != "" {
		status = http.StatusNotFound
	}
	return render(c, status, account.Accept(p))
}

func (s *Server) acceptInvitation(c echo.Context) error {
	inv, err := s.tenancy.AcceptInvitation(c.Request().Context(), mustUser(c), c.Param("token"))
	if err != nil {
		return err
	}
	s.flash(c, "success", "You joined "+inv.OrgName+".")
	return s.seeOther(c, paths.Org(inv.OrgSlug))
}

func (s *Server) profilePage(c echo.Context) error {
	u := mustUser(c)
	return s.renderProfile(c, http.StatusOK, account.ProfilePage{Email: u.Email, Name: u.Name}, false)
}

func (s *Server) renderProfile(c echo.Context, status int, p account.ProfilePage, passwordForm bool) error {
	m, err := s.meta(c, "Account settings", "account")
	if err != nil {
		return err
	}
	p.Meta = m
	fragment := account.ProfileForm(p)
	if passwordForm {
		fragment = account.PasswordForm(p)
	}
	return page(c, status, account.Profile(p), fragment)
}

func (s *Server) updateProfile(c echo.Context) error {
	in := tenancy.ProfileInput{Email: c.FormValue("email"), Name: c.FormValue("name")}
	_, err := s.tenancy.UpdateProfile(c.Request().Context(), mustUser(c).ID, in)
	var problems validation.Errors
	if errors.As(err, &problems) {
		return s.renderProfile(c, http.StatusUnprocessableEntity, account.ProfilePage{Email: in.Email, Name: in.Name, ProfileErrors: problems}, false)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", "Profile saved.")
	return s.seeOther(c, paths.Profile)
}

func (s *Server) changePassword(c echo.Context) error {
	u := mustUser(c)
	in := tenancy.PasswordInput{Current: c.FormValue("current_password"), New: c.FormValue("new_password"), Confirm: c.FormValue("confirm_password")}
	generation, err := s.tenancy.ChangePassword(c.Request().Context(), u, in, c.RealIP())
	var problems validation.Errors
	if errors.As(err, &problems) {
		return s.renderProfile(c, http.StatusUnprocessableEntity, account.ProfilePage{Email: u.Email, Name: u.Name, PasswordErrors: problems}, true)
	} else if err != nil {
		return err
	}
	if err := s.keepSession(c, u, generation); err != nil {
		return err
	}
	s.flash(c, "success", "Password changed. Your other sessions are signed out.")
	return s.seeOther(c, paths.Profile)
}

// signOutOthers ends the account's other console sessions.
func (s *Server) signOutOthers(c echo.Context) error {
	if err := s.endOtherSessions(c); err != nil {
		return err
	}
	s.flash(c, "success", "Signed out of every other session.")
	return s.seeOther(c, paths.Profile)
}

func (s *Server) apiSignOutOthers(c echo.Context) error {
	if err := s.endOtherSessions(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// endOtherSessions ends every console session of the signed-in account
// but the request's own.
func (s *Server) endOtherSessions(c echo.Context) error {
	u := mustUser(c)
	generation, err := s.store.EndSessions(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	return s.keepSession(c, u, generation)
}

// userJSON is an account in the API.
type userJSON struct {
	ID        int64  `json:"id"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	CreatedAt string `json:"created_at"`
}

func toUserJSON(u db.User) userJSON {
	return userJSON{ID: u.ID, Email: u.Email, Name: u.Name, CreatedAt: u.CreatedAt.UTC().Format(timeFormat)}
}

// timeFormat is how the API writes times: RFC 3339 in UTC.
const timeFormat = "2006-01-02T15:04:05Z07:00"

func (s *Server) apiMe(c echo.Context) error {
	return c.JSON(http.StatusOK, toUserJSON(mustUser(c)))
}

func (s *Server) apiUpdateMe(c echo.Context) error {
	u := mustUser(c)
	var body struct {
		Email *string `json:"email"`
		Name  *string `json:"name"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	in := tenancy.ProfileInput{Email: u.Email, Name: u.Name}
	if body.Email != nil {
		in.Email = *body.Email
	}
	if body.Name != nil {
		in.Name = *body.Name
	}
	u, err := s.tenancy.UpdateProfile(c.Request().Context(), u.ID, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toUserJSON(u))
}

func (s *Server) apiChangePassword(c echo.Context) error {
	var in tenancy.PasswordInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Confirm == "" {
		in.Confirm = in.New // the API has no second field to type
	}
	u := mustUser(c)
	generation, err := s.tenancy.ChangePassword(c.Request().Context(), u, in, c.RealIP())
	if err != nil {
		return err
	}
	if err := s.keepSession(c, u, generation); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
