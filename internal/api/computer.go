package api

import "github.com/gin-gonic/gin"

// Computer drives a desktop's screen, mouse and keyboard.
type Computer interface{}

func (s *server) computerRoutes(v1 *gin.RouterGroup) {}
