package main

import "testing"

func TestKeyValues(t *testing.T) {
	got, err := keyValues("--label", "key=value", []string{"zone=b", "tier=x=y", "empty="})
	if err != nil || len(got) != 3 || got["zone"] != "b" || got["tier"] != "x=y" || got["empty"] != "" {
		t.Errorf("keyValues: %v %v", got, err)
	}
	if _, err := keyValues("--env", "NAME=VALUE", []string{"PATH"}); err == nil || err.Error() != `--env "PATH": want NAME=VALUE` {
		t.Errorf("no '=': %v", err)
	}
}
