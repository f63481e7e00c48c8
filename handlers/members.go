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
	"github.com/toolgate/toolgate/views/orgs"
	"github.com/toolgate/toolgate/views/paths"
)

// Session key holding a just-created invitation until the page shows it once.
const sessionNewInvitationKey = "new_invitation"

func (s *Server) membersPage(c echo.Context) error {
	p := orgs.MembersPage{Invite: orgs.InviteForm{Role: string(auth.Member)}}
	if v := s.sessions.PopString(c.Request().Context(), sessionNewInvitationKey); v != "" {
		email, link, _ := strings.Cut(v, "\n")
		p.Created = &orgs.CreatedInvitation{Email: email, Link: link}
	}
	return s.renderMembers(c, http.StatusOK, p)
}

func (s *Server) renderMembers(c echo.Context, status int, p orgs.MembersPage) error {
	ctx := c.Request().Context()
	m, err := s.meta(c, "Members", "members")
	if err != nil {
		return err
	}
	org, u, role := orgOf(c), mustUser(c), roleOf(c)
	p.Meta = m
	p.Invite.CSRF, p.Invite.Action, p.Invite.IsOwner = m.CSRF, paths.Invitations(org.Slug), role == auth.Owner
	members, err := s.store.Members(ctx, org.ID)
	if err != nil {
		return err
	}
	for _, mem := range members {
		p.Members = append(p.Members, s.memberRow(c, mem, u, role))
	}
	if role.AtLeast(auth.Admin) {
		invs, err := s.store.PendingInvitations(ctx, org.ID)
		if err != nil {
			return err
		}
		for _, i := range invs {
			p.Invitations = append(p.Invitations, orgs.InvitationRow{ID: i.ID, Email: i.Email, Role: i.Role, InvitedBy: i.InvitedBy, ExpiresAt: i.ExpiresAt})
		}
	}
	return page(c, status, orgs.Members(p), orgs.InviteFormFragment(p.Invite))
}

// memberRow decides what the viewer may do with a member's row.
func (s *Server) memberRow(c echo.Context, m db.Member, viewer db.User, role auth.Role) orgs.MemberRow {
	canEdit := role == auth.Owner || role == auth.Admin && auth.Role(m.Role) != auth.Owner
	return orgs.MemberRow{CSRF: csrfToken(c), OrgSlug: orgOf(c).Slug, UserID: m.UserID, Email: m.Email, Name: m.Name,
		Role: m.Role, Joined: m.JoinedAt, IsSelf: m.UserID == viewer.ID, CanEdit: canEdit, CanGrantOwner: role == auth.Owner}
}

func (s *Server) createInvitation(c echo.Context) error {
	org := orgOf(c)
	in := tenancy.InviteInput{Email: c.FormValue("email"), Role: c.FormValue("role")}
	inv, token, err := s.tenancy.Invite(c.Request().Context(), org.ID, mustUser(c), roleOf(c), in)
	form := orgs.InviteForm{Email: in.Email, Role: in.Role}
	if errors.As(err, &form.Errors) {
		return s.renderMembers(c, http.StatusUnprocessableEntity, orgs.MembersPage{Invite: form})
	} else if err != nil {
		return err
	}
	s.sessions.Put(c.Request().Context(), sessionNewInvitationKey, inv.Email+"\n"+s.invitationURL(token))
	return s.seeOther(c, paths.Members(org.Slug))
}

// invitationURL is the absolute link an invited person opens.
func (s *Server) invitationURL(token string) string {
	return s.cfg.BaseURL.String() + paths.Invitation(token)
}

func (s *Server) revokeInvitation(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	org := orgOf(c)
	if err := s.store.RevokeInvitation(c.Request().Context(), org.ID, id, actorID(c)); err != nil {
		return err
	}
	s.flash(c, "success", "Invitation revoked.")
	return s.seeOther(c, paths.Members(org.Slug))
}

// changeRole answers htmx with the member's row and browsers with a redirect.
func (s *Server) changeRole(c echo.Context) error {
	userID, err := pathID(c, "user")
	if err != nil {
		return err
	}
	org, role := orgOf(c), roleOf(c)
	m, err := s.tenancy.ChangeRole(c.Request().Context(), org.ID, actorID(c), role, userID, tenancy.RoleInput{Role: c.FormValue("role")})
	var problems validation.Errors
	if errors.As(err, &problems) {
		current, lerr := s.store.Member(c.Request().Context(), org.ID, userID)
		if lerr != nil {
			return lerr
		}
		if !isHTMX(c) {
			s.flash(c, "error", problems["role"])
			return s.seeOther(c, paths.Members(org.Slug))
		}
		row := s.memberRow(c, current, mustUser(c), role)
		row.Error = problems["role"]
		return render(c, http.StatusUnprocessableEntity, orgs.MemberRowFragment(row))
	} else if err != nil {
		return err
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, orgs.MemberRowFragment(s.memberRow(c, m, mustUser(c), role)))
	}
	s.flash(c, "success", m.Email+" is now "+m.Role+".")
	return s.seeOther(c, paths.Members(org.Slug))
}

// removeMember answers htmx with an empty row and browsers with a redirect.
func (s *Server) removeMember(c echo.Context) error {
	userID, err := pathID(c, "user")
	if err != nil {
		return err
	}
	org, u := orgOf(c), mustUser(c)
	if err := s.tenancy.RemoveMember(c.Request().Context(), org.ID, u, roleOf(c), userID); err != nil {
		return err
	}
	if userID == u.ID {
		return s.seeOther(c, paths.Home)
	}
	if isHTMX(c) {
		return c.HTML(http.StatusOK, "")
	}
	s.flash(c, "success", "Member removed.")
	return s.seeOther(c, paths.Members(org.Slug))
}

// memberJSON is a membership in the API.
type memberJSON struct {
	UserID   int64  `json:"user_id"`
	Email    string `json:"email"`
	Name     string `json:"name"`
	Role     string `json:"role"`
	JoinedAt string `json:"joined_at"`
}

func toMemberJSON(m db.Member) memberJSON {
	return memberJSON{UserID: m.UserID, Email: m.Email, Name: m.Name, Role: m.Role, JoinedAt: m.JoinedAt.UTC().Format(timeFormat)}
}

func (s *Server) apiMembers(c echo.Context) error {
	members, err := s.store.Members(c.Request().Context(), orgOf(c).ID)
	if err != nil {
		return err
	}
	out := make([]memberJSON, 0, len(members))
	for _, m := range members {
		out = append(out, toMemberJSON(m))
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiChangeRole(c echo.Context) error {
	userID, err := pathID(c, "user")
	if err != nil {
		return err
	}
	var in tenancy.RoleInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	m, err := s.tenancy.ChangeRole(c.Request().Context(), orgOf(c).ID, actorID(c), roleOf(c), userID, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toMemberJSON(m))
}

// apiRemoveMember lets anyone leave and admins remove others; the service
// checks which.
func (s *Server) apiRemoveMember(c echo.Context) error {
	userID, err := pathID(c, "user")
	if err != nil {
		return err
	}
	if err := s.tenancy.RemoveMember(c.Request().Context(), orgOf(c).ID, mustUser(c), roleOf(c), userID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// invitationJSON is an invitation in the API; URL is set only in the answer
// that creates it.
type invitationJSON struct {
	ID        int64  `json:"id"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	InvitedBy string `json:"invited_by"`
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at"`
	URL       string `json:"url,omitempty"`
}

func toInvitationJSON(i db.Invitation) invitationJSON {
	return invitationJSON{ID: i.ID, Email: i.Email, Role: i.Role, InvitedBy: i.InvitedBy,
		CreatedAt: i.CreatedAt.UTC().Format(timeFormat), ExpiresAt: i.ExpiresAt.UTC().Format(timeFormat)}
}

func (s *Server) apiInvitations(c echo.Context) error {
	invs, err := s.store.PendingInvitations(c.Request().Context(), orgOf(c).ID)
	if err != nil {
		return err
	}
	out := make([]invitationJSON, 0, len(invs))
	for _, i := range invs {
		out = append(out, toInvitationJSON(i))
	}
	return c.JSON(http.StatusOK, list(out))
}

func (s *Server) apiCreateInvitation(c echo.Context) error {
	var in tenancy.InviteInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	inv, token, err := s.tenancy.Invite(c.Request().Context(), orgOf(c).ID, mustUser(c), roleOf(c), in)
	if err != nil {
		return err
	}
	out := toInvitationJSON(inv)
	out.URL = s.invitationURL(token)
	return c.JSON(http.StatusCreated, out)
}

func (s *Server) apiRevokeInvitation(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.store.RevokeInvitation(c.Request().Context(), orgOf(c).ID, id, actorID(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiAcceptInvitation(c echo.Context) error {
	var body struct {
		Token string `json:"token"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	inv, err := s.tenancy.AcceptInvitation(c.Request().Context(), mustUser(c), body.Token)
	if err != nil {
		return err
	}
	org, err := s.store.OrganizationOf(c.Request().Context(), mustUser(c).ID, inv.OrgSlug)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toOrgJSON(org.Organization, org.Role))
}
