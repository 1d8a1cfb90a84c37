package api

import "github.com/gin-gonic/gin"

func (s *server) mcpRoutes(r *gin.Engine) {}
