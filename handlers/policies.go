package handlers

import "github.com/labstack/echo/v4"

// policyRoutes are the console's policy pages of an organization and of a workspace.
func (s *Server) policyRoutes(org, ws *echo.Group) {}

// apiPolicyRoutes are the policy API of an organization and of a workspace.
func (s *Server) apiPolicyRoutes(org, ws *echo.Group) {}
