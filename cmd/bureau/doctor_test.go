package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/migrations"
	"github.com/pressly/goose/v3"
)

func TestParseRoutes(t *testing.T) {
	// /proc/net/route as the kernel writes it: addresses little-endian hex.
	const table = `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	0100A8C0	0003	0	0	100	00000000	0	0	0
eth0	0000A8C0	00000000	0001	0	0	100	00FFFFFF	0	0	0
wg0	0000780A	00000000	0001	0	0	0	0000FFFF	0	0	0
bureau0	0000780A	00000000	0001	0	0	0	0000FFFF	0	0	0
`
	got, err := parseRoutes(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	want := []hostNet{
		{prefix: netip.MustParsePrefix("192.168.0.0/24"), where: "route on eth0"},
		{prefix: netip.MustParsePrefix("10.120.0.0/16"), where: "route on wg0"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("routes %v, want %v (no default route, nothing on bureau's own bridge)", got, want)
	}
	if _, err := parseRoutes(strings.NewReader("Iface\nbad zz 0 0 0 0 0 zz\n")); err == nil {
		t.Error("a route line that is not hex: no error")
	}
}

func TestCheckNetwork(t *testing.T) {
	nets := func(n ...hostNet) func() ([]hostNet, error) {
		return func() ([]hostNet, error) { return n, nil }
	}
	eth := hostNet{prefix: netip.MustParsePrefix("192.168.1.0/24"), where: "address on eth0"}
	vpn := hostNet{prefix: netip.MustParsePrefix("10.120.8.0/22"), where: "route on wg0"}
	next := hostNet{prefix: netip.MustParsePrefix("10.121.0.0/16"), where: "address on eth1"}

	if f := checkNetwork("10.120.0.0/16", nets(eth)); f.Status != statusOK {
		t.Errorf("free subnet: %+v", f)
	}
	f := checkNetwork("10.120.0.0/16", nets(eth, vpn, next))
	if f.Status != statusFail || !strings.Contains(f.Detail, "10.120.8.0/22 (route on wg0)") || strings.Contains(f.Detail, "192.168") {
		t.Errorf("overlap: %+v", f)
	}
	if !strings.HasPrefix(f.Fix, "BUREAU_NETWORK_SUBNET=10.122.0.0/16 ") {
		t.Errorf("fix %q: want the first free 10.x.0.0/16", f.Fix)
	}
	// A host address inside the subnet counts as well as a route over it.
	if f := checkNetwork("10.0.0.0/8", nets(next)); f.Status != statusFail {
		t.Errorf("subnet holding a host network: %+v", f)
	}
	for _, bad := range []string{"nonsense", "10.120.0.0/29", "fd00::/64"} {
		if f := checkNetwork(bad, nets()); f.Status != statusFail || !strings.HasPrefix(f.Fix, "BUREAU_NETWORK_SUBNET=") {
			t.Errorf("subnet %q: %+v", bad, f)
		}
	}
	broken := func() ([]hostNet, error) { return nil, errors.New("no netlink") }
	if f := checkNetwork("10.120.0.0/16", broken); f.Status != statusWarn {
		t.Errorf("host networks unreadable: %+v", f)
	}
}

// certFiles writes a self-signed ECDSA certificate for names valid from
// notBefore to notAfter, and its key, and returns their paths.
func certFiles(t *testing.T, names []string, notBefore, notAfter time.Time) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestCheckTLS(t *testing.T) {
	now := time.Now()
	year := now.AddDate(1, 0, 0)
	exact, exactKey := certFiles(t, []string{"bureau.example.com"}, now.Add(-time.Hour), year)
	wild, wildKey := certFiles(t, []string{"*.example.com", "example.com"}, now.Add(-time.Hour), year)
	soon, soonKey := certFiles(t, []string{"bureau.example.com"}, now.Add(-time.Hour), now.Add(10*24*time.Hour))
	gone, goneKey := certFiles(t, []string{"bureau.example.com"}, now.AddDate(-1, 0, 0), now.Add(-time.Hour))
	early, earlyKey := certFiles(t, []string{"bureau.example.com"}, now.Add(24*time.Hour), year)
	for _, c := range []struct {
		name                  string
		mode, cert, key, host string
		want                  status
		detail                string
	}{
		{"off", "off", "", "", "bureau.example.com", statusOK, "only behind a TLS proxy or on loopback"},
		{"unset is off", "", "", "", "", statusOK, "plain HTTP"},
		{"auto", "auto", "", "", "bureau.example.com", statusOK, "auto"},
		{"auto without a public URL", "auto", "", "", "", statusFail, "BUREAU_PUBLIC_URL"},
		{"unknown mode", "on", "", "", "", statusFail, `"on"`},
		{"files without files", "files", "", "", "bureau.example.com", statusFail, "BUREAU_TLS_CERT"},
		{"covered", "files", exact, exactKey, "bureau.example.com", statusOK, "for bureau.example.com"},
		{"no public host to check", "files", exact, exactKey, "", statusOK, "no BUREAU_PUBLIC_URL"},
		{"not covered", "files", exact, exactKey, "other.example.com", statusFail, "does not cover other.example.com"},
		{"wildcard covers", "files", wild, wildKey, "bureau.example.com", statusOK, "*.example.com"},
		{"wildcard's own domain", "files", wild, wildKey, "example.com", statusOK, ""},
		{"wildcard is one label deep", "files", wild, wildKey, "a.bureau.example.com", statusFail, "does not cover"},
		{"expiring", "files", soon, soonKey, "bureau.example.com", statusWarn, "expires in"},
		{"expired", "files", gone, goneKey, "bureau.example.com", statusFail, "expired"},
		{"not valid yet", "files", early, earlyKey, "bureau.example.com", statusFail, "not valid before"},
		{"another certificate's key", "files", exact, wildKey, "bureau.example.com", statusFail, "private key does not match"},
		{"missing file", "files", exact + ".gone", exactKey, "bureau.example.com", statusFail, "no such file"},
	} {
		f := checkTLS(c.mode, c.cert, c.key, c.host)
		if f.Status != c.want || !strings.Contains(f.Detail, c.detail) || (f.Status != statusOK) != (f.Fix != "") {
			t.Errorf("%s: %+v, want %s with %q and a fix when not ok", c.name, f, c.want, c.detail)
		}
	}
}

func TestCheckPublicURL(t *testing.T) {
	for in, want := range map[string]status{
		"":                                statusWarn,
		"https://bureau.example.com":      statusOK,
		"https://bureau.example.com/":     statusOK,
		"http://10.0.0.5:8080":            statusOK,
		"ftp://bureau.example.com":        statusFail,
		"https://bureau.example.com/app":  statusFail,
		"https://bureau.example.com/?a=b": statusFail,
		"https://u:p@bureau.example.com":  statusFail,
		"bureau.example.com":              statusFail,
		"https://":                        statusFail,
		"https://%zz":                     statusFail,
	} {
		f := checkPublicURL(config.Config{PublicURL: strings.TrimSuffix(in, "/")})
		if f.Status != want || (want != statusOK && !strings.HasPrefix(f.Fix, "BUREAU_PUBLIC_URL=")) {
			t.Errorf("%q: %+v, want %s", in, f, want)
		}
	}
}

// fakeResolver answers from names, and for any name under a domain of
// wildcards; it records what it was asked.
type fakeResolver struct {
	names     map[string][]string
	wildcards map[string][]string
	asked     []string
}

func (r *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.asked = append(r.asked, host)
	if a, found := r.names[host]; found {
		return a, nil
	}
	if _, rest, cut := strings.Cut(host, "."); cut {
		if a, found := r.wildcards[rest]; found {
			return a, nil
		}
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func useResolver(t *testing.T, r resolver) {
	old := doctorResolver
	doctorResolver = r
	t.Cleanup(func() { doctorResolver = old })
}

func TestCheckDNS(t *testing.T) {
	ctx := context.Background()
	r := &fakeResolver{names: map[string][]string{"bureau.example.com": {"203.0.113.5"}},
		wildcards: map[string][]string{"desk.example.com": {"203.0.113.5"}}}
	useResolver(t, r)

	f := checkDNS(ctx, "bureau.example.com", "desk.example.com")
	if f.Status != statusOK || !strings.Contains(f.Detail, "bureau.example.com → 203.0.113.5") || !strings.Contains(f.Detail, "*.desk.example.com → 203.0.113.5") {
		t.Errorf("both resolve: %+v", f)
	}
	if len(r.asked) != 2 || !regexp.MustCompile(`^doctor-[0-9a-f]{12}\.desk\.example\.com$`).MatchString(r.asked[1]) {
		t.Errorf("asked %q: want the public host, then a random doctor-<hex> name under the preview domain", r.asked)
	}

	f = checkDNS(ctx, "bureau.example.com", "example.org")
	if f.Status != statusWarn || f.Fix != "add a wildcard DNS record *.example.org → this host" {
		t.Errorf("no wildcard: %+v", f)
	}
	f = checkDNS(ctx, "gone.example.com", "desk.example.com")
	if f.Status != statusWarn || !strings.Contains(f.Detail, "gone.example.com does not resolve (no such host)") || !strings.Contains(f.Fix, "gone.example.com → this host") {
		t.Errorf("public host unknown: %+v", f)
	}

	r.asked = nil
	for _, c := range []struct{ host, domain string }{{"", "localhost"}, {"", ""}, {"localhost", "localhost"}, {"192.0.2.7", ""}} {
		if f := checkDNS(ctx, c.host, c.domain); f.Status != statusOK {
			t.Errorf("host %q, domain %q: %+v", c.host, c.domain, f)
		}
	}
	if len(r.asked) != 0 {
		t.Errorf("asked %q: localhost, addresses and no preview domain need no lookup", r.asked)
	}
}

func TestCheckTools(t *testing.T) {
	without := func(missing ...string) func(string) (string, error) {
		return func(name string) (string, error) {
			if slices.Contains(missing, name) {
				return "", errors.New("not found")
			}
			return "/usr/bin/" + name, nil
		}
	}
	if f := checkTools(without()); f.Status != statusOK {
		t.Errorf("all there: %+v", f)
	}
	if f := checkTools(without("ffmpeg")); f.Status != statusWarn || !strings.Contains(f.Detail, "ffmpeg: recordings") || !strings.Contains(f.Fix, "apt-get install ffmpeg") {
		t.Errorf("no ffmpeg: %+v", f)
	}
	if f := checkTools(without("ffmpeg", "nft")); f.Status != statusFail || !strings.Contains(f.Fix, "nftables ffmpeg") {
		t.Errorf("no nft: %+v", f)
	}
}

func TestCheckDisk(t *testing.T) {
	stat := func(free map[string]diskUse) func(string) (diskUse, error) {
		return func(dir string) (diskUse, error) {
			u, found := free[dir]
			if !found {
				return diskUse{}, fs.ErrNotExist
			}
			return u, nil
		}
	}
	same := stat(map[string]diskUse{"/d": {at: "/d", dev: 1, free: 40 << 30}, "/c/i": {at: "/c", dev: 1, free: 40 << 30}})
	f := checkDisk(same, "/d", "/c/i")
	if f.Status != statusOK || f.Detail != "40.0 GiB free for /d and /c/i (not made yet; /c)" {
		t.Errorf("one file system: %+v", f)
	}
	two := stat(map[string]diskUse{"/d": {at: "/d", dev: 1, free: 40 << 30}, "/c": {at: "/c", dev: 2, free: 10 << 30}})
	if f := checkDisk(two, "/d", "/c"); f.Status != statusWarn || strings.Count(f.Detail, "free for") != 2 || f.Fix == "" {
		t.Errorf("cache under 20 GiB: %+v", f)
	}
	tight := stat(map[string]diskUse{"/d": {at: "/d", dev: 1, free: 4 << 30}, "/c": {at: "/c", dev: 2, free: 10 << 30}})
	if f := checkDisk(tight, "/d", "/c"); f.Status != statusFail {
		t.Errorf("data under 5 GiB: %+v", f)
	}
	if f := checkDisk(same, "/elsewhere"); f.Status != statusFail {
		t.Errorf("unmeasurable: %+v", f)
	}

	dir := t.TempDir()
	if got := nearestExisting(filepath.Join(dir, "a", "b")); got != dir {
		t.Errorf("nearest existing of a missing folder: %q, want %q", got, dir)
	}
	u, err := statDisk(filepath.Join(dir, "not-yet"))
	if err != nil || u.at != dir || u.free == 0 {
		t.Errorf("statDisk: %+v %v", u, err)
	}
}

func TestCheckDatabase(t *testing.T) {
	ctx := context.Background()
	total, _ := fs.Glob(migrations.FS, "*.sql")
	dir := t.TempDir()

	path := filepath.Join(dir, "none", "bureau.db")
	f := checkDatabase(ctx, path)
	if f.Status != statusWarn || !strings.Contains(f.Detail, "migrations pending (bureau serve applies them)") {
		t.Errorf("no database: %+v", f)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the check made %s", filepath.Dir(path))
	}

	// Migrated by the store as serve migrates: the newest.
	path = filepath.Join(dir, "bureau.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if f := checkDatabase(ctx, "sqlite://"+path); f.Status != statusOK || !strings.Contains(f.Detail, "the newest") {
		t.Errorf("migrated: %+v", f)
	}

	// Half migrated: the rest pending.
	half := filepath.Join(dir, "half.db")
	db, err := sql.Open("sqlite", half)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	srcs := p.ListSources()
	if _, err := p.UpTo(ctx, srcs[4].Version); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace("N migrations pending", "N", strconv.Itoa(len(total)-5), 1)
	if f := checkDatabase(ctx, half); f.Status != statusWarn || !strings.Contains(f.Detail, want) {
		t.Errorf("half migrated: %+v, want %q", f, want)
	}

	// Written by a newer bureau.
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, 1)`); err != nil {
		t.Fatal(err)
	}
	if f := checkDatabase(ctx, half); f.Status != statusFail || !strings.Contains(f.Detail, "newer than this bureau's") {
		t.Errorf("newer schema: %+v", f)
	}

	// A database nothing migrated.
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if f := checkDatabase(ctx, empty); f.Status != statusWarn || !strings.Contains(f.Detail, "no schema yet") {
		t.Errorf("empty database: %+v", f)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("the check wrote to the empty database: %v, %v", fi.Size(), err)
	}

	checkPostgresDatabase(t)
}

// checkPostgresDatabase runs the database check on PostgreSQL (make unit
// starts it), in a schema of its own: the store's tests share the
// database and drop its public schema.
func checkPostgresDatabase(t *testing.T) {
	ctx := context.Background()
	pg := os.Getenv("BUREAU_TEST_POSTGRES_URL")
	if pg == "" {
		if os.Getenv("BUREAU_REQUIRE_POSTGRES") == "1" {
			t.Fatal("BUREAU_REQUIRE_POSTGRES=1 but BUREAU_TEST_POSTGRES_URL is empty: PostgreSQL did not start")
		}
		t.Log("PostgreSQL half not run: BUREAU_TEST_POSTGRES_URL is unset (make unit sets it)")
		return
	}
	admin, err := sql.Open("pgx", pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := "doctor_" + randomHex(4)
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	sep := "?"
	if strings.Contains(pg, "?") {
		sep = "&"
	}
	inSchema := pg + sep + "search_path=" + schema

	f := checkDatabase(ctx, inSchema)
	if f.Status != statusWarn || !strings.Contains(f.Detail, "no schema yet") || strings.Contains(f.Detail, ":bureau@") {
		t.Errorf("empty PostgreSQL schema: %+v (and the password redacted)", f)
	}
	var tables int
	if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schema).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the check made %d tables (%v): it must not write", tables, err)
	}
	st, err := store.Open(ctx, inSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if f := checkDatabase(ctx, inSchema); f.Status != statusOK || !strings.Contains(f.Detail, "the newest") {
		t.Errorf("migrated PostgreSQL: %+v", f)
	}
}

func TestCheckListen(t *testing.T) {
	ctx := context.Background()
	bureau := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.Write([]byte(`{"status":"ok"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer bureau.Close()
	if f := checkListen(ctx, bureau.Listener.Addr().String()); f.Status != statusOK || !strings.Contains(f.Detail, "running bureau") {
		t.Errorf("held by bureau: %+v", f)
	}

	// Something else: it hangs up on every connection.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if f := checkListen(ctx, other.Addr().String()); f.Status != statusFail || !strings.Contains(f.Detail, "another program") {
		t.Errorf("held by another program: %+v", f)
	}

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	if f := checkListen(ctx, addr); f.Status != statusOK || !strings.Contains(f.Detail, "is free") {
		t.Errorf("free: %+v", f)
	}
	for _, bad := range []string{"8080", "127.0.0.1:http-nope", "192.0.2.1:8080"} {
		if f := checkListen(ctx, bad); f.Status != statusFail || !strings.HasPrefix(f.Fix, "BUREAU_LISTEN=") {
			t.Errorf("listen %q: %+v", bad, f)
		}
	}
}

func TestPrintFindingsJSON(t *testing.T) {
	var b bytes.Buffer
	found := []finding{{Check: "accelerator", Status: statusWarn, Detail: "TCG", Fix: "KVM"}, {Check: "disk", Status: statusOK, Detail: "40 GiB"}}
	if err := printFindings(&b, found, true); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	want := []map[string]any{
		{"check": "accelerator", "status": "warn", "detail": "TCG", "fix": "KVM"},
		{"check": "disk", "status": "ok", "detail": "40 GiB", "fix": ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if len(got[i]) != 4 {
			t.Errorf("entry %d has keys %v: want check, status, detail, fix", i, got[i])
		}
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("entry %d %s = %v, want %v", i, k, got[i][k], v)
			}
		}
	}
	b.Reset()
	if err := printFindings(&b, nil, true); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("no checks: %q %v", b.String(), err)
	}
}

func TestRunDoctor(t *testing.T) {
	ctx := context.Background()
	give := func(f finding) func(context.Context) finding { return func(context.Context) finding { return f } }
	checks := []check{
		{name: "accelerator", run: give(warn("TCG", "KVM"))},
		{name: "disk", run: give(ok("40 GiB free"))},
	}
	var b bytes.Buffer
	if err := runDoctor(ctx, checks, &b, false); err != nil {
		t.Errorf("warn only: %v, want exit status 0", err)
	}
	want := "warn  accelerator  TCG — fix: KVM\nok    disk         40 GiB free\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}

	// A FAIL is exit status 1, in JSON too; a check that does not answer
	// in time FAILs with its hung fix; a panic is a FAIL, not a crash.
	checks = append(checks,
		check{name: "libvirt", timeout: 50 * time.Millisecond, hung: "restart libvirtd",
			run: func(ctx context.Context) finding { <-ctx.Done(); time.Sleep(time.Second); return ok("late") }},
		check{name: "broken", run: func(context.Context) finding { panic("boom") }},
	)
	b.Reset()
	err := runDoctor(ctx, checks, &b, true)
	var code exitCode
	if !errors.As(err, &code) || code != 1 {
		t.Errorf("with a FAIL: %v, want exit status 1", err)
	}
	var got []finding
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[2].Status != statusFail || got[2].Check != "libvirt" || got[2].Fix != "restart libvirtd" || !strings.Contains(got[2].Detail, "no answer within") {
		t.Errorf("hung check: %+v", got)
	}
	if got[3].Status != statusFail || !strings.Contains(got[3].Detail, "boom") {
		t.Errorf("panicking check: %+v", got[3])
	}
}

func TestParseEnvFile(t *testing.T) {
	got, err := parseEnvFile(strings.NewReader(`# comment
; also a comment

BUREAU_LISTEN=0.0.0.0:8443
  BUREAU_PREVIEW_DOMAIN = "desk.example.com"
BUREAU_ADMIN_TOKEN='a=b'
#BUREAU_TLS=off
EMPTY=
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"BUREAU_LISTEN": "0.0.0.0:8443", "BUREAU_PREVIEW_DOMAIN": "desk.example.com", "BUREAU_ADMIN_TOKEN": "a=b", "EMPTY": ""}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := parseEnvFile(strings.NewReader("export X\n")); err == nil {
		t.Error("a line without =: no error")
	}
}

// The settings file fills in what the environment does not set; the
// environment and the command line's flags win.
func TestDoctorConfig(t *testing.T) {
	for _, k := range []string{"BUREAU_LISTEN", "BUREAU_NETWORK_SUBNET", "BUREAU_DATA_DIR", "BUREAU_PREVIEW_DOMAIN"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	t.Setenv("BUREAU_PREVIEW_DOMAIN", "mine.example.com")
	file := filepath.Join(t.TempDir(), "bureau.env")
	os.WriteFile(file, []byte("BUREAU_LISTEN=0.0.0.0:9999\nBUREAU_NETWORK_SUBNET=10.77.0.0/16\nBUREAU_DATA_DIR=/srv/bureau\nBUREAU_PREVIEW_DOMAIN=file.example.com\n"), 0o600)

	root := rootCmd()
	doctor, _, err := root.Find([]string{"doctor"})
	if err != nil {
		t.Fatal(err)
	}
	if err := doctor.ParseFlags([]string{"--data-dir", "/flag/dir"}); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	doctor.SetErr(&stderr)
	c, err := doctorConfig(doctor, config.Config{DataDir: "/flag/dir"}, file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "0.0.0.0:9999" || c.NetworkSubnet != "10.77.0.0/16" || c.PreviewDomain != "mine.example.com" || c.DataDir != "/flag/dir" {
		t.Errorf("config %+v: want listen and subnet from the file, preview domain from the environment, data dir from the flag", c)
	}
	if !strings.Contains(stderr.String(), file) {
		t.Errorf("stderr %q: want the file named", stderr.String())
	}

	// The default file missing is no error; a named one missing is.
	if _, err := doctorConfig(doctor, config.Config{DataDir: "/flag/dir"}, filepath.Join(t.TempDir(), "none")); err != nil {
		t.Errorf("default settings file missing: %v", err)
	}
	if err := doctor.ParseFlags([]string{"--env-file", "/nonexistent/bureau.env"}); err != nil {
		t.Fatal(err)
	}
	if _, err := doctorConfig(doctor, config.Config{DataDir: "/flag/dir"}, "/nonexistent/bureau.env"); err == nil {
		t.Error("a named settings file missing: no error")
	}
}

func TestCheckAccelerator(t *testing.T) {
	if f := checkAccelerator("bogus"); f.Status != statusFail || !strings.HasPrefix(f.Fix, "BUREAU_ACCELERATOR=") {
		t.Errorf("bad override: %+v", f)
	}
	f := checkAccelerator("tcg")
	if f.Status != statusWarn || !strings.HasPrefix(f.Detail, "TCG, software emulation (~100 s to a desktop): forced by configuration") ||
		f.Fix != "BUREAU_ACCELERATOR=auto where the host has KVM" {
		t.Errorf("forced TCG: %+v", f)
	}
	// auto says what serve would choose, on this host.
	accel, _, _ := hv.ChooseAccelerator("auto")
	if f := checkAccelerator("auto"); (accel == desktop.AccelKVM) != (f.Status == statusOK) || !strings.Contains(strings.ToLower(f.Detail), string(accel)) {
		t.Errorf("auto on this host (%s): %+v", accel, f)
	}
}

// The command itself: every check, in order, as JSON; a FAIL is exit
// status 1.
func TestDoctorCommand(t *testing.T) {
	t.Setenv("BUREAU_DATA_DIR", t.TempDir())
	t.Setenv("BUREAU_IMAGE_CACHE", t.TempDir())
	t.Setenv("BUREAU_NETWORK_SUBNET", "nonsense")     // a sure FAIL
	t.Setenv("BUREAU_LIBVIRT_URI", "test:///default") // libvirt's driver in this process
	t.Setenv("BUREAU_LISTEN", "127.0.0.1:0")
	root := rootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"doctor", "--json", "--env-file", ""})
	err := root.Execute()
	var code exitCode
	if !errors.As(err, &code) || code != 1 {
		t.Errorf("with a FAIL: %v, want exit status 1", err)
	}
	var got []finding
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	var names []string
	for _, f := range got {
		names = append(names, f.Check)
		if f.Status != statusOK && f.Status != statusWarn && f.Status != statusFail || f.Detail == "" || (f.Status != statusOK) != (f.Fix != "") {
			t.Errorf("finding %+v: want ok, warn or FAIL, a detail, and a fix when not ok", f)
		}
	}
	want := []string{"accelerator", "libvirt", "tools", "nftables", "network", "disk", "database", "listen", "public-url", "tls", "dns"}
	if !slices.Equal(names, want) {
		t.Fatalf("checks %v, want %v", names, want)
	}
	if got[1].Status != statusOK || !strings.HasPrefix(got[1].Detail, "libvirt ") {
		t.Errorf("libvirt's test driver: %+v", got[1])
	}
	if got[4].Status != statusFail || !strings.Contains(got[4].Detail, "nonsense") {
		t.Errorf("network: %+v", got[4])
	}
	t.Logf("on this host:\n%s", out.String())
}
