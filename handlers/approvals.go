package handlers

import "github.com/labstack/echo/v4"

// approvalRoutes are the console's approval pages of a workspace.
func (s *Server) approvalRoutes(ws *echo.Group) {}

// apiApprovalRoutes are the approval API of a workspace.
func (s *Server) apiApprovalRoutes(ws *echo.Group) {}
