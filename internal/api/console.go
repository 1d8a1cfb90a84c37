package api

import "github.com/gin-gonic/gin"

// Console issues console tokens and proxies a desktop's VNC to browsers.
type Console interface{}

func (s *server) consoleRoutes(r *gin.Engine, v1 *gin.RouterGroup) {}
