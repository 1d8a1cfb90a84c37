package desktop

import (
	"errors"
	"strings"
	"testing"
)

func TestNetworkPolicyValidate(t *testing.T) {
	ok := []NetworkPolicy{
		{},
		{AllowOut: []string{"10.99.0.0/24", "203.0.113.7", "api.example.com", "Example.COM."}, DenyOut: []string{"0.0.0.0/0"}},
	}
	for _, p := range ok {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	bad := map[string]NetworkPolicy{
		"network.deny_out":  {DenyOut: []string{"300.1.2.3/8"}},
		"network.allow_out": {AllowOut: []string{"fd00::/8"}},
	}
	for field, p := range bad {
		var ve *ValidationError
		if err := p.Validate(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%+v: %v, want a validation error on %s", p, err, field)
		}
	}
	for _, e := range []string{"", "localhost", "a..b", "-a.b", "a_b.c", "::1", "1.2.3.4/33", strings.Repeat("a", 64) + ".com"} {
		if _, _, err := ParseNetworkEntry(e); err == nil {
			t.Errorf("%q accepted", e)
		}
	}
	long := NetworkPolicy{DenyOut: make([]string, MaxNetworkRules+1)}
	for i := range long.DenyOut {
		long.DenyOut[i] = "198.51.100.1"
	}
	if err := long.Validate(); err == nil {
		t.Error("more than the maximum number of entries accepted")
	}
	if p, _, _ := ParseNetworkEntry("10.1.2.3/8"); p.String() != "10.0.0.0/8" {
		t.Errorf("CIDR not masked: %s", p)
	}
}

func TestTapNameAndMAC(t *testing.T) {
	if n := TapName("0123456789ab"); n != "bd-0123456789ab" || len(n) > 15 {
		t.Errorf("tap %q", n)
	}
	if a, b := TapNameOn("0123456789ab", "two"), TapNameOn("0123456789ab", "three"); a == b || a == TapName("0123456789ab") || len(a) > 15 || a[:1] != "b" {
		t.Errorf("taps on two hosts: %q %q", a, b)
	}
	if n := TapNameOn("0123456789ab", ""); n != TapName("0123456789ab") {
		t.Errorf("tap on no named host: %q", n)
	}
	if n := TapName("tmpl-0123456789ab"); len(n) > 15 {
		t.Errorf("tap %q longer than a device name may be", n)
	}
	m := MAC("0123456789ab")
	if len(m) != 17 || !strings.HasPrefix(m, "02:") || m == MAC("0123456789ac") || m != MAC("0123456789ab") {
		t.Errorf("MAC %q: want a stable, locally administered address per id", m)
	}
}

func TestNetworkPolicyNeverOpensMetadata(t *testing.T) {
	for _, e := range []string{"169.254.169.254", "169.254.0.0/16", "169.254.77.0/24", "127.0.0.1"} {
		var ve *ValidationError
		if err := (NetworkPolicy{AllowOut: []string{e}}).Validate(); !errors.As(err, &ve) || ve.Field != "network.allow_out" {
			t.Errorf("allow %s: %v, want refused", e, err)
		}
		// Denying it is always fine.
		if err := (NetworkPolicy{DenyOut: []string{e}}).Validate(); err != nil {
			t.Errorf("deny %s: %v", e, err)
		}
	}
}

func TestReservedOpensNeedAnAdmin(t *testing.T) {
	openable, err := ParseRanges("10.50.0.0/16, 192.168.7.0/24")
	if err != nil {
		t.Fatal(err)
	}
	p := NetworkPolicy{AllowOut: []string{"203.0.113.9", "api.example.com", "10.50.3.0/24", "10.0.0.0/8", "192.168.0.0/16",
		"0.0.0.0/0", "100.64.1.1", "172.16.5.5", "10.99.0.0/24"}}
	got := p.ReservedOpens(openable, []string{"10.99.0.0/24"})
	want := []string{"10.0.0.0/8", "192.168.0.0/16", "0.0.0.0/0", "100.64.1.1", "172.16.5.5"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("reserved opens %v, want %v", got, want)
	}
	for _, bad := range []string{"169.254.0.0/16", "0.0.0.0/0", "10.0.0.0/8,example.com", "nope"} {
		if _, err := ParseRanges(bad); err == nil {
			t.Errorf("ParseRanges(%q) accepted", bad)
		}
	}
}

func TestValidateTextRefusesControlCharacters(t *testing.T) {
	for _, ok := range []string{"", "agent #3", "Zoë – 日本", strings.Repeat("a", 10)} {
		if err := ValidateText("name", ok, 10, false); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if err := ValidateText("description", "line one\n\tline two", 100, true); err != nil {
		t.Errorf("multiline text: %v", err)
	}
	for _, bad := range []string{"x\n", "x\u001b[31mred", "nul\x00", "cr\r", "del\x7f", "rtl\u202eexe.txt", "iso\u2066x", "\xff\xfe", strings.Repeat("a", 11)} {
		var ve *ValidationError
		if err := ValidateText("name", bad, 10, false); !errors.As(err, &ve) || ve.Field != "name" {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
}
