package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/floe-broker/floe/node/group"
)

// TestMigrationPolicyFlag: --group-consumer-migration-policy takes Kafka's
// four values (any case), defaults to bidirectional, and refuses anything
// else with a message naming the values.
func TestMigrationPolicyFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, group.MigrationBidirectional},
		{[]string{"--group-consumer-migration-policy=UPGRADE"}, group.MigrationUpgrade},
		{[]string{"--group-consumer-migration-policy", "downgrade"}, group.MigrationDowngrade},
		{[]string{"--group-consumer-migration-policy=disabled"}, group.MigrationDisabled},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		cfg := addGroupFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := cfg().ConsumerMigrationPolicy; got != tc.want {
			t.Errorf("%v: policy %q, want %q", tc.args, got, tc.want)
		}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addGroupFlags(fs)
	err := fs.Parse([]string{"--group-consumer-migration-policy=sideways"})
	if err == nil || !strings.Contains(err.Error(), "bidirectional, upgrade, downgrade, disabled") {
		t.Fatalf("a bad policy: %v", err)
	}
}
