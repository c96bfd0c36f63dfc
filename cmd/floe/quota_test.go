package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestQuotaCommands(t *testing.T) {
	brokers := []string{"--brokers", startBrokerWith(t, nil), "--timeout", "20s"}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := quotaMain(append(args, brokers...), &out)
		return out.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	must("alter", "--user", "alice", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	must("alter", "--user-defaults", "--client", "app", "--add-config", "request_percentage=50")
	out := must("alter", "--client-defaults", "--add-config", "producer_byte_rate=10", "--validate-only")
	if !strings.Contains(out, "nothing changed") {
		t.Fatalf("validate only: %s", out)
	}
	all := must("describe")
	for _, want := range []string{"user=alice producer_byte_rate 1048576", "user=alice consumer_byte_rate 2097152",
		"client-id=app,user=<default> request_percentage 50"} {
		if !containsFields(all, want) {
			t.Fatalf("describe lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "client-id=<default>") {
		t.Fatalf("a validate-only change was stored:\n%s", all)
	}
	strict := must("describe", "--user", "alice", "--strict")
	if strings.Count(strict, "\n") != 3 {
		t.Fatalf("describe --user alice --strict:\n%s", strict)
	}
	must("alter", "--user", "alice", "--delete-config", "producer_byte_rate")
	if out := must("describe", "--user", "alice"); strings.Contains(out, "producer_byte_rate") || !strings.Contains(out, "consumer_byte_rate") {
		t.Fatalf("after delete:\n%s", out)
	}
	for _, bad := range [][]string{
		{"alter", "--user", "alice", "--add-config", "producer_byte_rate=-1"},
		{"alter", "--user", "alice", "--add-config", "no_such_key=1"},
		{"alter", "--ip", "not-an-ip", "--add-config", "connection_creation_rate=1"},
	} {
		if _, err := run(bad...); err == nil || !strings.Contains(err.Error(), "INVALID_REQUEST") {
			t.Errorf("%v: %v, want INVALID_REQUEST", bad, err)
		}
	}
	for _, bad := range [][]string{
		{"alter", "--add-config", "producer_byte_rate=1"},
		{"alter", "--user", "a", "--user-defaults", "--add-config", "producer_byte_rate=1"},
		{"alter", "--user", "a", "--add-config", "producer_byte_rate"},
		{"alter", "--user", "a"},
		{"describe", "--add-config", "x=1"},
	} {
		if _, err := run(bad...); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
