package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/config"
)

// client calls a bureau server's REST API.
type client struct {
	base  string
	token string
	http  *http.Client
}

func newClient(cfg *config.Config) (*client, error) {
	tok := cfg.Token
	if tok == "" {
		b, err := os.ReadFile(cfg.AdminTokenFile())
		if err != nil {
			return nil, fmt.Errorf("no API token: set BUREAU_TOKEN or --token (or run on the server host as root, where %s holds the admin token)", cfg.AdminTokenFile())
		}
		tok = strings.TrimSpace(string(b))
	}
	return &client{base: strings.TrimRight(cfg.URL, "/"), token: tok, http: &http.Client{Timeout: 5 * time.Minute}}, nil
}

// apiError is an error response from the server.
type apiError struct {
	// Status is the HTTP status (the body's "status", as a request's in
	// already_decided, is not it).
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code) }

// do sends a request with an optional JSON body and decodes a JSON reply
// into out (when non-nil).
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach bureau at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		return errorFrom(resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		return json.Unmarshal(data, out)
	}
	return nil
}

// errorFrom is the API's error answer (status, body) as an error: its
// {"error": {...}}, or the body's text when it is not one.
func errorFrom(status int, data []byte) error {
	var env struct {
		Error apiError `json:"error"`
	}
	if json.Unmarshal(data, &env) != nil || env.Error.Message == "" {
		return &apiError{Status: status, Code: "http", Message: strings.TrimSpace(string(data))}
	}
	env.Error.Status = status
	return &env.Error
}

// keyValues reads repeated flag values "k=v" (want says the form) into a map.
func keyValues(flag, want string, list []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%s %q: want %s", flag, kv, want)
		}
		out[k] = v
	}
	return out, nil
}
