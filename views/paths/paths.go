// Package paths builds the console's URLs, so handlers that redirect and
// views that link agree on them.
package paths

import "net/url"

// Root and account pages.
const (
	Home     = "/"
	SignIn   = "/signin"
	SignUp   = "/signup"
	SignOut  = "/signout"
	Profile  = "/settings/profile"
	Password = "/settings/password"
	Tokens   = "/settings/tokens"
	Orgs     = "/orgs"
	NewOrg   = "/orgs/new"
	Healthz  = "/healthz"
	OpenAPI  = "/api/v1/openapi.json"
)

// MyCredentials lists the signed-in user's own (account) credentials.
const MyCredentials = "/settings/credentials"

// SignOutOthers ends every console session of the account but the one
// asking.
const SignOutOthers = "/settings/sessions/sign-out-others"

// Token is one personal access token's page.
func Token(id string) string { return Tokens + "/" + url.PathEscape(id) }

// Invitation is the link an invited person opens.
func Invitation(token string) string { return "/invitations/" + url.PathEscape(token) }

// Org is an organization's home.
func Org(org string) string { return "/o/" + url.PathEscape(org) }

// OrgSettings is an organization's settings page.
func OrgSettings(org string) string { return Org(org) + "/settings" }

// Members lists an organization's members and invitations.
func Members(org string) string { return Org(org) + "/members" }

// Member is one member's row.
func Member(org, userID string) string { return Members(org) + "/" + url.PathEscape(userID) }

// Invitations is where an organization's invitations are created.
func Invitations(org string) string { return Org(org) + "/invitations" }

// OrgInvitation is one pending invitation.
func OrgInvitation(org, id string) string { return Invitations(org) + "/" + url.PathEscape(id) }

// OrgPolicies lists an organization's policy rules, which bind every workspace.
func OrgPolicies(org string) string { return Org(org) + "/policies" }

// WorkspacePolicies lists a workspace's own policy rules.
func WorkspacePolicies(org, ws string) string { return WorkspaceSection(org, ws, "policies") }

// Approvals lists a workspace's approval requests.
func Approvals(org, ws string) string { return WorkspaceSection(org, ws, "approvals") }

// Approval is one approval request's page, the link sent to approvers.
func Approval(org, ws, id string) string { return Approvals(org, ws) + "/" + url.PathEscape(id) }

// OrgCredentials lists an organization's credentials.
func OrgCredentials(org string) string { return Org(org) + "/credentials" }

// AuditLog lists an organization's audit events.
func AuditLog(org string) string { return Org(org) + "/audit" }

// Workspaces lists an organization's workspaces.
func Workspaces(org string) string { return Org(org) + "/workspaces" }

// NewWorkspace is the form creating a workspace.
func NewWorkspace(org string) string { return Workspaces(org) + "/new" }

// Workspace is a workspace's home.
func Workspace(org, ws string) string { return Org(org) + "/w/" + url.PathEscape(ws) }

// WorkspaceSettings renames or deletes a workspace.
func WorkspaceSettings(org, ws string) string { return Workspace(org, ws) + "/settings" }

// WorkspaceSection is a section of a workspace, such as "sources".
func WorkspaceSection(org, ws, section string) string { return Workspace(org, ws) + "/" + section }

// WorkspaceCredentials lists the credentials that apply in a workspace.
func WorkspaceCredentials(org, ws string) string { return WorkspaceSection(org, ws, "credentials") }

// Credential is one credential's page under a credentials list.
func Credential(list, id string) string { return list + "/" + url.PathEscape(id) }

// WorkspaceSource is a source's page, seen from a workspace.
func WorkspaceSource(org, ws, id string) string {
	return WorkspaceSection(org, ws, "sources") + "/" + url.PathEscape(id)
}

// WithNext adds a return path to a sign-in or sign-up link.
func WithNext(p, next string) string {
	if next == "" || next == Home {
		return p
	}
	return p + "?next=" + url.QueryEscape(next)
}

// APIKeys lists a workspace's API keys and creates them.
func APIKeys(org, ws string) string { return WorkspaceSection(org, ws, "api-keys") }

// APIKey is one of a workspace's API keys.
func APIKey(org, ws, id string) string { return APIKeys(org, ws) + "/" + url.PathEscape(id) }
