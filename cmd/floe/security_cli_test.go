package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/runtime"
)

// startSecuredBroker runs a broker with the ACL authorizer and the audit
// log on. Without authentication every client here is User:ANONYMOUS,
// made a super user, so the CLI can do everything.
func startSecuredBroker(t *testing.T, auditFile string) string {
	return startBrokerWith(t, func(o *runtime.Options) {
		o.Node.Security = node.SecurityConfig{Authorizer: node.AuthorizerACL, SuperUsers: []string{"User:ANONYMOUS"},
			Audit: node.AuditConfig{Enabled: true}}
		o.AuditLogFile = auditFile
	})
}

func TestACLAndRoleCommands(t *testing.T) {
	brokers := []string{"--brokers", startSecuredBroker(t, ""), "--timeout", "20s"}
	run := func(main func([]string, io.Writer) error, args ...string) (string, error) {
		var out bytes.Buffer
		err := main(append(args, brokers...), &out)
		return out.String(), err
	}
	must := func(main func([]string, io.Writer) error, args ...string) string {
		t.Helper()
		out, err := run(main, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	out := must(aclMain, "create", "--allow-principal", "User:alice", "--producer", "--topic", "orders", "--resource-pattern-type", "prefixed")
	if strings.Count(out, "created ACL") != 3 || !strings.Contains(out, "User:alice ALLOW from * WRITE on TOPIC:PREFIXED:orders") {
		t.Fatalf("--producer created:\n%s", out)
	}
	out = must(aclMain, "create", "--allow-principal", "User:bob", "--consumer", "--topic", "orders", "--group", "billing")
	if !strings.Contains(out, "READ on GROUP:LITERAL:billing") || strings.Count(out, "created ACL") != 3 {
		t.Fatalf("--consumer created:\n%s", out)
	}
	must(aclMain, "create", "--deny-principal", "User:bob", "--host", "10.1.1.1", "--operation", "read", "--topic", "orders")
	list := must(aclMain, "list")
	if strings.Count(list, "\n") != 8 || !containsFields(list, "User:bob DENY READ 10.1.1.1 TOPIC LITERAL orders") {
		t.Fatalf("list:\n%s", list)
	}
	// MATCH lists what applies to a name: alice's prefixed grants apply
	// to orders-eu; bob's literal ones do not.
	match := must(aclMain, "list", "--topic", "orders-eu", "--resource-pattern-type", "match")
	if strings.Count(match, "User:alice") != 3 || strings.Contains(match, "User:bob") {
		t.Fatalf("match:\n%s", match)
	}
	if out := must(aclMain, "delete", "--principal", "User:bob", "--topic", "orders"); strings.Count(out, "deleted ACL") != 3 {
		t.Fatalf("delete:\n%s", out)
	}
	if _, err := run(aclMain, "delete"); !errors.Is(err, errUsage) {
		t.Fatalf("delete without a filter: %v", err)
	}
	if _, err := run(aclMain, "create", "--allow-principal", "alice", "--operation", "read", "--topic", "t"); !errors.Is(err, errUsage) {
		t.Fatalf("a principal without a type: %v", err)
	}

	// Roles.
	if out := must(roleMain, "create", "ops", "User:carol"); out != "created role ops\n" {
		t.Fatalf("create: %q", out)
	}
	if _, err := run(roleMain, "create", "ops"); err == nil {
		t.Fatalf("creating a role twice succeeded")
	}
	must(roleMain, "bind", "ops", "User:dave", "User:erin")
	must(roleMain, "unbind", "ops", "User:carol")
	must(roleMain, "bind", "viewer", "User:*")
	must(aclMain, "create", "--allow-role", "ops", "--operation", "alter-configs", "--topic", "orders")
	roles := must(roleMain, "list")
	for _, want := range []string{"ops custom User:dave,User:erin", "viewer built-in User:*", "admin built-in -"} {
		if !containsFields(roles, want) {
			t.Fatalf("role list lacks %q:\n%s", want, roles)
		}
	}
	desc := must(roleMain, "describe", "ops", "consumer")
	for _, want := range []string{"ROLE ops (built in: false)", "Role:ops ALLOW from * ALTER_CONFIGS on TOPIC:LITERAL:orders",
		"ROLE consumer (built in: true)", "Role:consumer ALLOW from * READ on GROUP:LITERAL:*"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe lacks %q:\n%s", want, desc)
		}
	}
	if _, err := run(roleMain, "delete", "viewer"); err == nil || !strings.Contains(err.Error(), "built in") {
		t.Fatalf("deleting a built-in role: %v", err)
	}
	must(roleMain, "delete", "ops")
	if list := must(aclMain, "list"); strings.Contains(list, "Role:ops") {
		t.Fatalf("the role's ACLs outlived it:\n%s", list)
	}
	if _, err := run(roleMain, "bind", "ops", "User:x"); err == nil || !strings.Contains(err.Error(), "RESOURCE_NOT_FOUND") {
		t.Fatalf("binding to a deleted role: %v", err)
	}
}

// The audit log: every change above went to __audit_log and the file;
// floe audit verify finds the chain whole, and names the record a copy of
// the log was tampered at.
func TestAuditVerify(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	addr := startSecuredBroker(t, file)
	brokers := []string{"--brokers", addr, "--timeout", "30s"}
	for i, args := range [][]string{
		{"create", "--allow-principal", "User:a", "--operation", "read", "--topic", "t1"},
		{"create", "--allow-principal", "User:b", "--operation", "write", "--topic", "t2"},
		{"delete", "--principal", "User:a"},
	} {
		if err := aclMain(append(args, brokers...), io.Discard); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
	// Wait for the records to be in the log (they are written after the
	// answers).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	values := readTopicUntil(ctx, t, addr, node.AuditTopic, 3)
	var out bytes.Buffer
	if err := auditMain(append([]string{"verify"}, brokers...), &out); err != nil {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "chain holds") {
		t.Fatalf("verify said:\n%s", out.String())
	}

	// A copy of the log with one record's principal changed: verify names
	// the record after it.
	copied := make([][]byte, len(values))
	copy(copied, values)
	var doc map[string]any
	if err := json.Unmarshal(copied[1], &doc); err != nil {
		t.Fatal(err)
	}
	doc["actor"] = map[string]any{"user": map[string]any{"name": "User:someone-else"}}
	copied[1], _ = json.Marshal(doc)
	produceValuesTo(ctx, t, addr, "tampered", copied)
	out.Reset()
	err := auditMain(append([]string{"verify", "--topic", "tampered"}, brokers...), &out)
	if !errors.Is(err, errChainBroken) || !strings.Contains(err.Error(), "partition 0 offset 2") {
		t.Fatalf("tampered copy: %v\n%s", err, out.String())
	}
	// The untouched copy verifies.
	produceValuesTo(ctx, t, addr, "untouched", values)
	if err := auditMain(append([]string{"verify", "--topic", "untouched"}, brokers...), io.Discard); err != nil {
		t.Fatalf("untouched copy: %v", err)
	}

	// The file sink holds the same events, unchained.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(data), "\n"); lines < 3 || !strings.Contains(string(data), `"CreateACLs"`) {
		t.Fatalf("audit file holds %d lines:\n%s", lines, data)
	}
}

// readTopicUntil reads partition 0 of a topic from its start until it
// has at least n records, and returns their values.
func readTopicUntil(ctx context.Context, t *testing.T, addr, topic string, n int) [][]byte {
	t.Helper()
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var vals [][]byte
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		for len(vals) < n && pctx.Err() == nil {
			cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { vals = append(vals, r.Value) })
		}
		cancel()
		cl.Close()
		if len(vals) >= n {
			return vals
		}
	}
	t.Fatalf("%s never held %d records", topic, n)
	return nil
}

func produceValuesTo(ctx context.Context, t *testing.T, addr, topic string, values [][]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
}

// What a client without any ACL sees from the CLI (the walkthrough's bob,
// here User:ANONYMOUS with nobody a super user): the consumer is refused
// with TOPIC_AUTHORIZATION_FAILED, the topic list is empty.
func TestCLIWithoutACLs(t *testing.T) {
	addr := startBrokerWith(t, func(o *runtime.Options) {
		o.Node.Security = node.SecurityConfig{Authorizer: node.AuthorizerACL}
	})
	brokers := []string{"--brokers", addr, "--timeout", "10s"}
	err := consumeMain(context.Background(), append([]string{"--topic", "orders", "--from-beginning", "--exit-at-end"}, brokers...), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("consume without ACLs: %v", err)
	}
	var out bytes.Buffer
	if err := topicMain(append([]string{"list"}, brokers...), &out); err != nil || strings.TrimSpace(out.String()) != "TOPIC  PARTITIONS  REPLICATION-FACTOR" {
		t.Fatalf("topic list without ACLs: %v\n%q", err, out.String())
	}
	if err := aclMain(append([]string{"list"}, brokers...), io.Discard); err == nil || !strings.Contains(err.Error(), "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("acl list without ACLs: %v", err)
	}
}
