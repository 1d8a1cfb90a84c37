// Command oidc-provider is a small, real OpenID Connect provider for
// bureau's single sign-on tests: ZITADEL's example provider (the
// github.com/zitadel/oidc/v3 library and its example storage and login
// page) with one confidential web client and the users of a JSON file,
// adding a "groups" claim to the ID token and userinfo. It is a test tool,
// never a production provider: its signing key and login page are the
// example's.
//
//	oidc-provider -listen 127.0.0.1:9998 -issuer http://127.0.0.1:9998/ \
//	  -client-id bureau -client-secret s3cret \
//	  -redirect-uri http://127.0.0.1:8080/auth/callback -users users.json
//
// The users file is the example storage's format (StoreFromFile): an
// object of users by id, each {"ID","Username","Password","FirstName",
// "LastName","Email","EmailVerified","IsAdmin",…}, where each user may
// also list "Groups" (strings). A user without Groups is in
// ["bureau-admins"] when IsAdmin, else in -member-groups.
//
// The login page (GET /login/username?authRequestID=…) is a form with
// inputs #username and #password and a submit button.
//
// Every flag has an environment variable: OIDC_LISTEN, OIDC_ISSUER,
// OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URIS (comma-separated),
// OIDC_USERS_FILE, OIDC_MEMBER_GROUPS, OIDC_ID_TOKEN_CLAIMS.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func main() {
	listen := flag.String("listen", env("OIDC_LISTEN", "127.0.0.1:9998"), "address to listen on (loopback)")
	issuer := flag.String("issuer", env("OIDC_ISSUER", ""), "issuer URL (default http://<listen>/)")
	clientID := flag.String("client-id", env("OIDC_CLIENT_ID", "bureau"), "the client id")
	clientSecret := flag.String("client-secret", env("OIDC_CLIENT_SECRET", "bureau-test-secret"), "the client secret")
	redirects := flag.String("redirect-uri", env("OIDC_REDIRECT_URIS", "http://127.0.0.1:8080/auth/callback"), "the client's redirect URIs, comma-separated")
	usersFile := flag.String("users", env("OIDC_USERS_FILE", ""), "users JSON file (the example storage's format, plus optional Groups)")
	memberGroups := flag.String("member-groups", env("OIDC_MEMBER_GROUPS", "bureau-users"), "groups of a user that is not IsAdmin and lists no Groups, comma-separated")
	idTokenClaims := flag.Bool("id-token-claims", env("OIDC_ID_TOKEN_CLAIMS", "") == "1", "put profile and email claims in the ID token too (by default they are only at userinfo, as many providers do)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fail := func(msg string, args ...any) {
		logger.Error(msg, args...)
		os.Exit(1)
	}
	if *usersFile == "" {
		fail("-users (or OIDC_USERS_FILE) is required")
	}
	if *issuer == "" {
		*issuer = "http://" + *listen + "/"
	}
	users, err := storage.StoreFromFile(*usersFile)
	if err != nil {
		fail("reading the users file", "file", *usersFile, "error", err)
	}
	groups, err := readGroups(*usersFile)
	if err != nil {
		fail("reading the users' groups", "file", *usersFile, "error", err)
	}
	uris := splitList(*redirects)
	if len(uris) == 0 {
		fail("at least one -redirect-uri is required")
	}
	storage.RegisterClients(storage.WebClient(*clientID, *clientSecret, uris...))
	st := &groupStorage{
		Storage:       storage.NewStorage(users),
		users:         users,
		groups:        groups,
		memberGroups:  splitList(*memberGroups),
		idTokenClaims: *idTokenClaims,
	}
	router := exampleop.SetupServer(*issuer, st, logger, false)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fail("listen", "addr", *listen, "error", err)
	}
	srv := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	// The tests wait for this line (or for the discovery document).
	logger.Info("oidc-provider listening", "addr", ln.Addr().String(), "issuer", *issuer, "client_id", *clientID, "redirect_uris", uris)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fail("serve", "error", err)
	}
}

// readGroups reads the optional Groups of each user in the users file, by
// user id.
func readGroups(path string) (map[string][]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file map[string]struct {
		Groups []string `json:"Groups"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for id, u := range file {
		if u.Groups != nil {
			out[id] = u.Groups
		}
	}
	return out, nil
}

// groupStorage is the example storage with a "groups" claim.
type groupStorage struct {
	*storage.Storage
	users         storage.UserStore
	groups        map[string][]string
	memberGroups  []string
	idTokenClaims bool
}

// groupsOf is the user's groups (never nil for a user that exists).
func (s *groupStorage) groupsOf(userID string) ([]string, bool) {
	u := s.users.GetUserByID(userID)
	if u == nil {
		return nil, false
	}
	if g, ok := s.groups[userID]; ok {
		return append([]string{}, g...), true
	}
	if u.IsAdmin {
		return []string{"bureau-admins"}, true
	}
	return append([]string{}, s.memberGroups...), true
}

func (s *groupStorage) addGroups(info *oidc.UserInfo, userID string) {
	if g, ok := s.groupsOf(userID); ok {
		info.AppendClaims("groups", g)
	}
}

// SetUserinfoFromRequest fills the ID token's claims: the example's, and
// groups.
func (s *groupStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	s.addGroups(info, req.GetSubject())
	return nil
}

// SetUserinfoFromToken fills the userinfo endpoint's answer: the
// example's, and groups.
func (s *groupStorage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	if info.Subject != "" {
		subject = info.Subject
	}
	s.addGroups(info, subject)
	return nil
}

// GetClientByClientID gives the client, asserting the userinfo claims in
// the ID token when -id-token-claims says so.
func (s *groupStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil || !s.idTokenClaims {
		return c, err
	}
	return assertingClient{c}, nil
}

type assertingClient struct{ op.Client }

func (assertingClient) IDTokenUserinfoClaimsAssertion() bool { return true }
