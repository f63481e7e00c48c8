package handlers

import (
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/toolgate/toolgate/internal/auth"
)

// routes is the route table.
func (s *Server) routes(e *echo.Echo) {
	e.Pre(s.mcpFirst)
	e.Use(middleware.RequestID(), s.requestLog, middleware.Recover(), securityHeaders(), bodyLimit)

	// Operations and assets: no session, no CSRF.
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/static/*", s.static)
	e.GET("/api/v1/openapi.json", s.openAPI)
	if s.mcp != nil {
		// The MCP endpoint authenticates API keys itself: no session, no
		// CSRF. mcpFirst serves it ahead of the router; the route stays in
		// the table for the route checks.
		e.Match([]string{"GET", "POST", "DELETE"}, "/mcp", echo.WrapHandler(s.mcp))
	}

	app := e.Group("", echo.WrapMiddleware(s.sessions.LoadAndSave), s.errorsInSession, s.csrf())

	// Console: accounts.
	web := app.Group("", s.sessionUser)
	web.GET("/", s.home, s.requireUser)
	web.GET("/signin", s.signInPage)
	web.POST("/signin", s.signIn)
	web.GET("/signup", s.signUpPage)
	web.POST("/signup", s.signUp)
	web.POST("/signout", s.signOut)
	web.GET("/invitations/:token", s.invitationPage)
	web.POST("/invitations/:token", s.acceptInvitation, s.requireUser)

	// Console: personal settings.
	me := web.Group("/settings", s.requireUser)
	me.GET("", s.redirectTo("/settings/profile"))
	me.GET("/profile", s.profilePage)
	me.POST("/profile", s.updateProfile)
	me.POST("/password", s.changePassword)
	me.POST("/sessions/sign-out-others", s.signOutOthers)
	me.GET("/tokens", s.tokensPage)
	me.POST("/tokens", s.createToken)
	me.POST("/tokens/:id/revoke", s.revokeToken)
	me.GET("/credentials", s.myCredentialsPage)
	me.GET("/credentials/new", s.newCredentialPage)
	me.POST("/credentials", s.createCredential)
	s.credentialRoutes(me.Group("/credentials/:id", s.loadMyCredential))

	// Console: organizations.
	web.GET("/orgs", s.orgsPage, s.requireUser)
	web.GET("/orgs/new", s.newOrgPage, s.requireUser)
	web.POST("/orgs", s.createOrg, s.requireUser)

	org := web.Group("/o/:org", s.requireUser, s.loadOrg)
	org.GET("", s.orgHome)
	org.GET("/settings", s.orgSettingsPage)
	org.POST("/settings", s.updateOrg, requireRole(auth.Admin))
	org.POST("/leave", s.leaveOrg)
	org.GET("/members", s.membersPage)
	org.POST("/invitations", s.createInvitation, requireRole(auth.Admin))
	org.POST("/invitations/:id/revoke", s.revokeInvitation, requireRole(auth.Admin))
	org.POST("/members/:user/role", s.changeRole, requireRole(auth.Admin))
	org.POST("/members/:user/remove", s.removeMember, requireRole(auth.Admin))
	org.GET("/workspaces", s.workspacesPage)
	org.GET("/workspaces/new", s.newWorkspacePage, requireRole(auth.Admin))
	org.POST("/workspaces", s.createWorkspace, requireRole(auth.Admin))
	// Credentials: the service decides who may do what (members keep their
	// own account credentials; owners and admins manage shared ones).
	org.GET("/credentials", s.credentialsPage)
	org.GET("/credentials/new", s.newCredentialPage, requireRole(auth.Member))
	org.POST("/credentials", s.createCredential)
	s.credentialRoutes(org.Group("/credentials/:id"))
	// The audit log: who changed what, for owners and admins.
	org.GET("/audit", s.auditLogPage, requireRole(auth.Admin))

	ws := org.Group("/w/:ws", s.loadWorkspace)
	ws.GET("", s.workspaceHome)
	ws.GET("/settings", s.workspaceSettingsPage)
	ws.POST("/settings", s.updateWorkspace, requireRole(auth.Admin))
	ws.POST("/delete", s.deleteWorkspace, requireRole(auth.Admin))
	ws.GET("/registry", s.registryFragment)
	ws.GET("/tools", s.catalogPage)
	ws.GET("/tools/:path", s.toolPage)
	ws.POST("/tools/:path/try", s.tryTool, requireRole(auth.Member))
	ws.POST("/sources/refresh-all", s.refreshAll, requireRole(auth.Admin))
	ws.GET("/sources", s.sourcesPage)
	ws.GET("/sources/new", s.newSourcePage, requireRole(auth.Admin))
	ws.POST("/sources", s.createSource, requireRole(auth.Admin))
	ws.POST("/sources/test", s.testSourceForm, requireRole(auth.Admin))
	ws.GET("/sources/import", s.importPage, requireRole(auth.Admin))
	ws.POST("/sources/import", s.importSources, requireRole(auth.Admin))
	src := ws.Group("/sources/:id", s.loadSource)
	src.GET("", s.sourcePage)
	src.GET("/state", s.sourceState)
	src.GET("/edit", s.editSourcePage, requireRole(auth.Admin))
	src.POST("", s.updateSource, requireRole(auth.Admin))
	src.POST("/test-form", s.testSourceForm, requireRole(auth.Admin))
	src.POST("/test", s.testSavedSource, requireRole(auth.Admin))
	src.POST("/refresh", s.refreshSource, requireRole(auth.Admin))
	src.POST("/enabled", s.setSourceEnabled, requireRole(auth.Admin))
	src.POST("/delete", s.deleteSource, requireRole(auth.Admin))
	ws.GET("/credentials", s.credentialsPage)
	ws.GET("/credentials/new", s.newCredentialPage, requireRole(auth.Member))
	ws.POST("/credentials", s.createCredential)
	s.credentialRoutes(ws.Group("/credentials/:id"))
	// API keys act as their creator: members and above create their own;
	// the service lets owners and admins revoke any, members their own.
	ws.GET("/api-keys", s.apiKeysPage)
	ws.POST("/api-keys", s.createAPIKey, requireRole(auth.Member))
	ws.POST("/api-keys/:id/revoke", s.revokeAPIKey, requireRole(auth.Member))
	// Activity: every member of the organization, viewers too.
	ws.GET("/activity", s.activityPage)
	ws.GET("/activity/:id", s.activityCallPage)
	// Connect an agent: anyone sees the snippets; members and above make a key there.
	ws.GET("/connect", s.connectPage)
	ws.POST("/connect", s.createConnectKey, requireRole(auth.Member))
	// Policies and approvals: each file keeps its own routes (policies.go,
	// approvals.go) beside its handlers.
	s.policyRoutes(org.Group("/policies"), ws.Group("/policies"))
	s.approvalRoutes(ws.Group("/approvals"))
	ws.GET("/:section", s.comingSoon)

	// JSON API: session or personal access token.
	api := app.Group("/api/v1", s.apiUser, s.requireUser)
	api.GET("/me", s.apiMe)
	api.PATCH("/me", s.apiUpdateMe)
	api.PUT("/me/password", s.apiChangePassword)
	api.DELETE("/me/sessions", s.apiSignOutOthers)
	api.GET("/me/tokens", s.apiTokens)
	api.POST("/me/tokens", s.apiCreateToken)
	api.DELETE("/me/tokens/:id", s.apiRevokeToken)
	api.GET("/me/credentials", s.apiMyCredentials)
	api.POST("/me/credentials", s.apiCreateMyCredential)
	s.apiCredentialRoutes(api.Group("/me/credentials/:id", s.loadMyCredential))
	api.POST("/invitations/accept", s.apiAcceptInvitation)
	api.GET("/orgs", s.apiOrgs)
	api.POST("/orgs", s.apiCreateOrg)

	apiOrg := api.Group("/orgs/:org", s.loadOrg)
	apiOrg.GET("", s.apiOrg)
	apiOrg.PATCH("", s.apiUpdateOrg, requireRole(auth.Admin))
	apiOrg.GET("/members", s.apiMembers)
	apiOrg.PATCH("/members/:user", s.apiChangeRole, requireRole(auth.Admin))
	apiOrg.DELETE("/members/:user", s.apiRemoveMember)
	apiOrg.GET("/invitations", s.apiInvitations, requireRole(auth.Admin))
	apiOrg.POST("/invitations", s.apiCreateInvitation, requireRole(auth.Admin))
	apiOrg.DELETE("/invitations/:id", s.apiRevokeInvitation, requireRole(auth.Admin))
	apiOrg.GET("/workspaces", s.apiWorkspaces)
	apiOrg.POST("/workspaces", s.apiCreateWorkspace, requireRole(auth.Admin))

	apiOrg.GET("/sources", s.apiSources)
	apiOrg.POST("/sources", s.apiCreateSource, requireRole(auth.Admin))
	apiOrg.POST("/sources/test", s.apiTestSource, requireRole(auth.Admin))
	s.apiSourceRoutes(apiOrg.Group("/sources/:id", s.loadSource))

	// Credentials: no role gate here, since members may keep account
	// credentials; the service enforces who manages which scope.
	apiOrg.GET("/credentials", s.apiCredentials)
	apiOrg.POST("/credentials", s.apiCreateCredential)
	s.apiCredentialRoutes(apiOrg.Group("/credentials/:id"))
	apiOrg.GET("/audit-events", s.apiAuditEvents, requireRole(auth.Admin))

	apiWS := apiOrg.Group("/workspaces/:ws", s.loadWorkspace)
	apiWS.GET("", s.apiWorkspace)
	apiWS.PATCH("", s.apiUpdateWorkspace, requireRole(auth.Admin))
	apiWS.DELETE("", s.apiDeleteWorkspace, requireRole(auth.Admin))
	apiWS.GET("/registry", s.apiRegistry)
	apiWS.GET("/tools", s.apiTools)
	apiWS.GET("/tools/:path", s.apiTool)
	apiWS.GET("/sources", s.apiSources)
	apiWS.POST("/sources", s.apiCreateSource, requireRole(auth.Admin))
	apiWS.POST("/sources/test", s.apiTestSource, requireRole(auth.Admin))
	apiWS.POST("/sources/import", s.apiImportSources, requireRole(auth.Admin))
	s.apiSourceRoutes(apiWS.Group("/sources/:id", s.loadSource))
	apiWS.GET("/credentials", s.apiCredentials)
	apiWS.POST("/credentials", s.apiCreateCredential)
	s.apiCredentialRoutes(apiWS.Group("/credentials/:id"))
	// API keys: as on the console.
	apiWS.GET("/api-keys", s.apiAPIKeys)
	apiWS.POST("/api-keys", s.apiCreateAPIKey, requireRole(auth.Member))
	apiWS.DELETE("/api-keys/:id", s.apiRevokeAPIKey, requireRole(auth.Member))
	// Activity: as on the console.
	apiWS.GET("/activity", s.apiActivity)
	apiWS.GET("/activity/:id", s.apiActivityCall)
	s.apiPolicyRoutes(apiOrg.Group("/policies"), apiWS.Group("/policies"))
	s.apiApprovalRoutes(apiWS.Group("/approvals"))
	s.approverRoutes(ws.Group("/approvers"), apiWS.Group("/approvers"))
}

// apiSourceRoutes are the routes of one source, in a workspace or the organization.
func (s *Server) apiSourceRoutes(g *echo.Group) {
	g.GET("", s.apiSource)
	g.PATCH("", s.apiUpdateSource, requireRole(auth.Admin))
	g.DELETE("", s.apiDeleteSource, requireRole(auth.Admin))
	g.POST("/test", s.apiTestSavedSource, requireRole(auth.Admin))
	g.POST("/refresh", s.apiRefreshSource, requireRole(auth.Admin))
	g.GET("/tools", s.apiSourceTools)
}

// credentialRoutes are the console routes of one credential, in a
// workspace, the organization or the user's settings.
func (s *Server) credentialRoutes(g *echo.Group) {
	g.GET("", s.credentialPage)
	g.POST("", s.updateCredential)
	g.POST("/secret", s.replaceCredentialSecret)
	g.POST("/test", s.testCredential)
	g.POST("/delete", s.deleteCredential)
}

// apiCredentialRoutes are the API routes of one credential, in a
// workspace, the organization or /me.
func (s *Server) apiCredentialRoutes(g *echo.Group) {
	g.GET("", s.apiCredential)
	g.PATCH("", s.apiUpdateCredential)
	g.DELETE("", s.apiDeleteCredential)
	g.POST("/test", s.apiTestCredential)
}

// errorsInSession renders errors while the session is still loaded, so an
// error page knows who is signed in and a flash survives.
func (s *Server) errorsInSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(ctxSession, true)
		if err := next(c); err != nil {
			c.Error(err)
		}
		return nil
	}
}

// redirectTo answers with a permanent redirect to a fixed path.
func (s *Server) redirectTo(to string) echo.HandlerFunc {
	return func(c echo.Context) error { return c.Redirect(301, to) }
}
