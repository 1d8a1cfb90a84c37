package store

import (
	"context"
	"reflect"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// storedPolicies are network_policy values as bureau has written them
// (the JSON of the domain type while it still carried JSON tags), with the
// policy each holds. They must keep reading, and be written the same.
var storedPolicies = []struct {
	column string
	policy desktop.NetworkPolicy
}{
	{"", desktop.NetworkPolicy{}},
	{`{"allow_out":["api.example.com","10.1.2.0/24"],"deny_out":["0.0.0.0/0"],"deny_dns":true}`,
		desktop.NetworkPolicy{AllowOut: []string{"api.example.com", "10.1.2.0/24"}, DenyOut: []string{"0.0.0.0/0"}, DenyDNS: true}},
	{`{"allow_out":["192.168.1.5"],"deny_out":null}`, desktop.NetworkPolicy{AllowOut: []string{"192.168.1.5"}}},
	{`{"allow_out":null,"deny_out":["203.0.113.0/24"]}`, desktop.NetworkPolicy{DenyOut: []string{"203.0.113.0/24"}}},
	{`{"allow_out":null,"deny_out":null,"deny_dns":true}`, desktop.NetworkPolicy{DenyDNS: true}},
}

func TestPolicyColumnFormat(t *testing.T) {
	for _, c := range storedPolicies {
		if got := policyJSON(c.policy); got != c.column {
			t.Errorf("policyJSON(%+v) = %s, want %s", c.policy, got, c.column)
		}
		if got, err := parsePolicy(c.column); err != nil || !reflect.DeepEqual(got, c.policy) {
			t.Errorf("parsePolicy(%s) = %+v, %v; want %+v", c.column, got, err, c.policy)
		}
	}
	if _, err := parsePolicy(`{"allow_out":`); err == nil {
		t.Error("a broken column reads without error")
	}
}

// TestOldPolicyRowsRead: a row whose network_policy an earlier bureau
// wrote reads back as the policy it holds.
func TestOldPolicyRowsRead(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			if err := s.CreateDesktop(ctx, newDesktop("p1", "alice", "policy")); err != nil {
				t.Fatal(err)
			}
			for _, c := range storedPolicies {
				if _, err := s.exec(ctx, `UPDATE desktops SET network_policy=? WHERE id=?`, c.column, "p1"); err != nil {
					t.Fatal(err)
				}
				d, err := s.GetDesktop(ctx, "p1")
				if err != nil {
					t.Fatalf("%s: %v", c.column, err)
				}
				if !reflect.DeepEqual(d.Network, c.policy) {
					t.Errorf("%s reads as %+v, want %+v", c.column, d.Network, c.policy)
				}
			}
		})
	}
}
