package itest

// Authorization and the audit log with a real client (franz-go's kgo and
// kadm) against a real broker. Until authentication (SASL, mTLS) exists,
// the client's principal comes from its client id ("as:User:alice")
// through a hook compiled only into test builds (tag floe_itest,
// node/runtime/principal_itest.go); nothing else differs from a release
// build. docs_security_test.go runs docs/security.md's walkthrough.

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	itestBinOnce sync.Once
	itestBin     string
	itestBinErr  error
)

// itestBinary builds floe with the floe_itest tag, once per test binary.
func itestBinary(t *testing.T) string {
	t.Helper()
	itestBinOnce.Do(func() {
		itestBin, itestBinErr = BuildTagged(buildDir, "floe_itest")
	})
	if itestBinErr != nil {
		t.Fatal(itestBinErr)
	}
	return itestBin
}

// securedBroker runs floe with ACLs and the audit log on, User:admin a
// super user, and principals taken from client ids.
func securedBroker(t *testing.T, flags ...string) *Broker {
	return StartBroker(t, WithBinary(itestBinary(t)), WithEnv("FLOE_ITEST_PRINCIPAL_FROM_CLIENT_ID=1"),
		WithFlags(append([]string{"--authorizer", "acl", "--super-users", "User:admin", "--audit-log",
			"--group-initial-rebalance-delay-ms", "100", "--group-min-session-timeout-ms", "1000"}, flags...)...))
}

func clientAs(t *testing.T, addr, principal string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("as:" + principal),
		kgo.RequestRetries(2), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestRealClientAuthorization(t *testing.T) {
	t.Parallel()
	b := securedBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := kadm.NewClient(clientAs(t, b.KafkaAddr, "User:admin"))
	for _, topic := range []string{"orders", "secret"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("admin creates %s: %v", topic, err)
		}
	}
	// kafka-acls --producer and --consumer for alice, through kadm.
	acls := kadm.NewACLs().Allow("User:alice").Topics("orders").
		Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := admin.CreateACLs(ctx, acls); err != nil || firstACLErr(res) != nil {
		t.Fatalf("create ACLs: %v %v", err, firstACLErr(res))
	}
	group := kadm.NewACLs().Allow("User:alice").Groups("billing").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := admin.CreateACLs(ctx, group); err != nil || firstACLErr(res) != nil {
		t.Fatalf("create group ACL: %v %v", err, firstACLErr(res))
	}
	everyAllow := kadm.NewACLs().AnyResource().Allow().AllowHosts().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)
	described, err := admin.DescribeACLs(ctx, everyAllow)
	n := 0
	for _, d := range described {
		n += len(d.Described)
	}
	if err != nil || n != 5 {
		t.Fatalf("describe ACLs: %v %+v", err, described)
	}

	// Alice produces to orders (idempotently: InitProducerId passes on
	// her WRITE to a topic) and consumes it in her group.
	alice := clientAs(t, b.KafkaAddr, "User:alice", kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o1")}).FirstErr(); err != nil {
		t.Fatalf("alice produces: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice produces to secret: %v", err)
	}
	got := ""
	for got == "" && ctx.Err() == nil {
		fs := alice.PollFetches(ctx)
		if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !kerr.IsRetriable(err) {
			t.Fatalf("alice consumes: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = string(r.Value) })
	}
	if got != "o1" {
		t.Fatalf("alice read %q", got)
	}
	if err := alice.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commits: %v", err)
	}

	// Bob has no ACL: refused everywhere, and Metadata hides every topic.
	bobCl := clientAs(t, b.KafkaAddr, "User:bob")
	if err := bobCl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("b")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) &&
		!errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob produces: %v", err)
	}
	bob := kadm.NewClient(bobCl)
	if topics, err := bob.ListTopics(ctx); err != nil || len(topics) != 0 {
		t.Fatalf("bob lists topics: %v %v", topics.Names(), err)
	}
	if res, err := bob.DescribeACLs(ctx, everyAllow); err != nil || len(res) == 0 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob describes ACLs: %v %+v", err, res)
	}
	if groups, err := bob.ListGroups(ctx); err != nil || len(groups) != 0 {
		t.Fatalf("bob lists groups: %v %v", groups.Groups(), err)
	}
	if groups, err := admin.ListGroups(ctx); err != nil || len(groups) != 1 {
		t.Fatalf("admin lists groups: %v %v", groups.Groups(), err)
	}

	// The audit log holds bob's denials and alice's ACL grants, chained;
	// the CLI reads it as User:ANONYMOUS once granted READ on it.
	if res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").Topics("__audit_log").
		Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || firstACLErr(res) != nil {
		t.Fatalf("grant the audit log: %v %v", err, firstACLErr(res))
	}
	records := waitAuditRecords(ctx, t, b.KafkaAddr, func(all string) bool {
		return strings.Contains(all, `"name":"User:bob"`) && strings.Contains(all, `"status":"Failure"`) &&
			strings.Contains(all, "User:ANONYMOUS ALLOW from * READ on TOPIC:LITERAL:__audit_log")
	})
	out, err := exec.CommandContext(ctx, itestBinary(t), "audit", "verify", "--brokers", b.KafkaAddr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "chain holds") {
		t.Fatalf("floe audit verify: %v\n%s\n(records: %d)", err, out, records)
	}
}

// waitAuditRecords consumes __audit_log as admin until done holds for
// everything read so far; it returns how many records it read.
func waitAuditRecords(ctx context.Context, t *testing.T, addr string, done func(all string) bool) int {
	t.Helper()
	cl := clientAs(t, addr, "User:admin", kgo.ConsumeTopics("__audit_log"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var all strings.Builder
	n := 0
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			all.Write(r.Value)
			all.WriteByte('\n')
			n++
		})
		cancel()
		if done(all.String()) {
			return n
		}
	}
	t.Fatalf("the audit log never held what was expected; it holds:\n%s", all.String())
	return n
}

func firstACLErr(res kadm.CreateACLsResults) error {
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}
