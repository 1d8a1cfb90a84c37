package api

import "github.com/gin-gonic/gin"

// Guest runs commands and moves files inside a desktop's guest.
type Guest interface{}

func (s *server) guestRoutes(v1 *gin.RouterGroup) {}
