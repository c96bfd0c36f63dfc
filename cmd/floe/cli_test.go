package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/runtime"
)

func TestSplitArgsMixesFlagsAndNames(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("partitions", 0, "")
	fs.Bool("if-not-exists", false, "")
	var cfg kvList
	fs.Var(&cfg, "config", "")
	for _, tc := range []struct {
		args         []string
		flags, names string
	}{
		{[]string{"a", "--partitions", "3", "b"}, "[--partitions 3]", "[a b]"},
		{[]string{"--if-not-exists", "a", "--config", "x=1", "--partitions=2"}, "[--if-not-exists --config x=1 --partitions=2]", "[a]"},
		{[]string{"a", "--", "--partitions", "-b"}, "[]", "[a --partitions -b]"},
		{[]string{"-", "--unknown", "v"}, "[--unknown]", "[- v]"},
	} {
		flags, names := splitArgs(fs, tc.args)
		if fmt.Sprint(flags) != tc.flags || fmt.Sprint(names) != tc.names {
			t.Errorf("splitArgs(%q) = %v, %v; want %s, %s", tc.args, flags, names, tc.flags, tc.names)
		}
	}
}

func TestParseArgsFallsBackToEnvironment(t *testing.T) {
	t.Setenv("FLOE_BROKERS", "b1:1,b2:2")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cf := addClientFlags(fs, time.Second)
	names, err := parseArgs(fs, []string{"x", "--timeout", "3s"})
	if err != nil || fmt.Sprint(names) != "[x]" || *cf.brokers != "b1:1,b2:2" || *cf.timeout != 3*time.Second {
		t.Fatalf("names %v err %v brokers %q timeout %v", names, err, *cf.brokers, *cf.timeout)
	}
	fs2 := flag.NewFlagSet("t", flag.ContinueOnError)
	fs2.SetOutput(io.Discard)
	cf2 := addClientFlags(fs2, time.Second)
	if _, err := parseArgs(fs2, []string{"--brokers", "cli:9"}); err != nil || *cf2.brokers != "cli:9" {
		t.Fatalf("the command line must beat the environment: %q, %v", *cf2.brokers, err)
	}
}

func TestKVListAndListFlag(t *testing.T) {
	var l kvList
	for _, s := range []string{"a=1", "b=x=y", "c="} {
		if err := l.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	if l.String() != "a=1,b=x=y,c=" {
		t.Fatalf("kvList holds %s", l.String())
	}
	for _, bad := range []string{"a=2", "novalue", "=v"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	var d listFlag
	_ = d.Set("a,b")
	_ = d.Set("c")
	if d.String() != "a,b,c" || d.Set(" , ") == nil {
		t.Fatalf("listFlag holds %s", d.String())
	}
}

func TestFormatRendersRecords(t *testing.T) {
	rec := &kgo.Record{
		Topic: "t", Partition: 3, Offset: 42, Key: []byte("k1"), Value: []byte("hello"),
		Timestamp: time.UnixMilli(1700000000123),
		Headers:   []kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2", Value: []byte("v2")}},
	}
	for _, tc := range []struct{ format, want string }{
		{"%v", "hello\n"},
		{"%k %v %o %p", "k1 hello 42 3\n"},
		{`%t[%p]@%o\t%T %h %K/%S 100%%\n`, "t[3]@42\t1700000000123 h1=v1,h2=v2 2/5 100%\n"},
		{`no verbs\\`, "no verbs\\\n"},
		{"", "\n"},
	} {
		parts, err := parseFormat(tc.format)
		if err != nil {
			t.Fatalf("parseFormat(%q): %v", tc.format, err)
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		writeRecord(w, parts, rec)
		w.Flush()
		if buf.String() != tc.want {
			t.Errorf("format %q wrote %q, want %q", tc.format, buf.String(), tc.want)
		}
	}
	for _, bad := range []string{"%x", "trailing %", "%"} {
		if _, err := parseFormat(bad); !errors.Is(err, errUsage) {
			t.Errorf("parseFormat(%q): %v, want a usage error", bad, err)
		}
	}
}

func TestStartOffsets(t *testing.T) {
	for _, tc := range []struct {
		arg        string
		start, end int64
		want       int64
	}{
		{"", 5, 20, 20}, {"end", 5, 20, 20}, {"beginning", 5, 20, 5},
		{"7", 5, 20, 7}, {"2", 5, 20, 5}, {"99", 5, 20, 20},
		{"-3", 5, 20, 17}, {"-30", 5, 20, 5}, {"0", 0, 0, 0},
	} {
		s, err := parseStart(tc.arg)
		if err != nil {
			t.Fatalf("parseStart(%q): %v", tc.arg, err)
		}
		if got := s.position(tc.start, tc.end); got != tc.want {
			t.Errorf("--offset %q over [%d, %d) starts at %d, want %d", tc.arg, tc.start, tc.end, got, tc.want)
		}
	}
	if _, err := parseStart("latest"); !errors.Is(err, errUsage) {
		t.Errorf("--offset latest: %v, want a usage error", err)
	}
}

func TestProduceRecordsFromLines(t *testing.T) {
	pc, err := newProduceConfig("t", "::", -1, "all", "zstd")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, key, value string }{
		{"k::v", "k", "v"}, {"k::v::w", "k", "v::w"}, {"novalue", "", "novalue"}, {"::v", "", "v"}, {"", "", ""},
	} {
		r := pc.record([]byte(tc.line))
		if string(r.Key) != tc.key || string(r.Value) != tc.value || r.Partition != -1 {
			t.Errorf("line %q: key %q value %q partition %d", tc.line, r.Key, r.Value, r.Partition)
		}
	}
	if r := pc.record([]byte("novalue")); r.Key != nil {
		t.Errorf("a line without the separator has key %q, want none", r.Key)
	}
	pc, _ = newProduceConfig("t", "", 4, "1", "none")
	if r := pc.record([]byte("a:b")); r.Key != nil || string(r.Value) != "a:b" || r.Partition != 4 {
		t.Errorf("without a separator: %+v", r)
	}
}

func TestBadInvocationsAreUsageErrors(t *testing.T) {
	ctx := context.Background()
	run := map[string]func([]string) error{
		"topic":   func(a []string) error { return topicMain(a, io.Discard) },
		"produce": func(a []string) error { return produceMain(ctx, a, strings.NewReader(""), io.Discard) },
		"consume": func(a []string) error { return consumeMain(ctx, a, io.Discard) },
		"group":   func(a []string) error { return groupMain(a, io.Discard) },
		"txn":     func(a []string) error { return txnMain(a, io.Discard) },
	}
	for _, tc := range []struct {
		cmd  string
		args []string
	}{
		{"topic", nil},
		{"topic", []string{"frobnicate"}},
		{"topic", []string{"create"}},
		{"topic", []string{"create", "t", "--partitions", "0"}},
		{"topic", []string{"create", "t", "--replication-factor", "-2"}},
		{"topic", []string{"create", "t", "--config", "novalue"}},
		{"topic", []string{"list", "t"}},
		{"topic", []string{"alter", "t"}},
		{"topic", []string{"alter", "t", "--config", "a=1", "--delete-config", "a"}},
		{"topic", []string{"delete", "--no-such-flag", "t"}},
		{"produce", nil},
		{"produce", []string{"--topic", "t", "--acks", "2"}},
		{"produce", []string{"--topic", "t", "--compression", "brotli"}},
		{"produce", []string{"--topic", "t", "--partition", "-3"}},
		{"produce", []string{"--topic", "t", "stray"}},
		{"produce", []string{"t", "u"}},
		{"produce", []string{"--acks", "all"}},
		{"consume", []string{"t", "--topic", "u"}},
		{"consume", []string{"t", "u", "--count", "1"}},
		{"group", nil},
		{"group", []string{"frobnicate"}},
		{"group", []string{"describe"}},
		{"group", []string{"delete", "--timeout", "1s"}},
		{"group", []string{"list", "g"}},
		{"group", []string{"lag", "--no-such-flag", "g"}},
		{"consume", nil},
		{"consume", []string{"--topic", "t", "--group", "g", "--partition", "1"}},
		{"consume", []string{"--topic", "t", "--from-beginning", "--offset", "5"}},
		{"consume", []string{"--topic", "t", "--count", "-1"}},
		{"consume", []string{"--topic", "t", "--format", "%q"}},
		{"consume", []string{"--topic", "t", "--offset", "soon"}},
		{"txn", nil},
		{"txn", []string{"frobnicate"}},
		{"txn", []string{"describe"}},
		{"txn", []string{"describe-producers", "--partition", "0"}},
		{"txn", []string{"list", "stray"}},
		{"txn", []string{"list", "--no-such-flag"}},
	} {
		err := run[tc.cmd](tc.args)
		if !errors.Is(err, errUsage) || exitCode(err) != 2 {
			t.Errorf("floe %s %s: %v (exit %d), want a usage error (exit 2)", tc.cmd, strings.Join(tc.args, " "), err, exitCode(err))
		}
	}
}

func TestTopicIsPositionalOrFlag(t *testing.T) {
	for _, tc := range []struct {
		flag       string
		positional []string
		want       string // "" : a usage error
	}{
		{"", []string{"t"}, "t"},
		{"t", nil, "t"},
		{"t", []string{"t"}, "t"},
		{"t", []string{"u"}, ""},
		{"", nil, ""},
		{"", []string{"t", "u"}, ""},
	} {
		got, err := topicArg("produce", tc.flag, tc.positional)
		if tc.want == "" {
			if !errors.Is(err, errUsage) {
				t.Errorf("--topic %q, %q: %q, %v; want a usage error", tc.flag, tc.positional, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("--topic %q, %q: %q, %v; want %q", tc.flag, tc.positional, got, err, tc.want)
		}
	}
	_, err := topicArg("consume", "a", []string{"b"})
	if err == nil || !strings.Contains(err.Error(), `topic "b" and --topic "a"`) {
		t.Errorf("two topics that disagree: %v", err)
	}
}

// startBroker runs a single-node broker in this process on a free port
// with its data in a temporary directory.
func startBroker(t *testing.T) string {
	t.Helper()
	return startBrokerWith(t, nil)
}

// startBrokerWith is startBroker with its options changed by configure.
func startBrokerWith(t *testing.T, configure func(*runtime.Options)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	host, port, err := runtime.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	opts := runtime.Options{
		DataDir: t.TempDir(), KafkaAddr: addr, MaxRequestBytes: 100 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Node: node.Config{NodeID: 1, KafkaHost: host, KafkaPort: port, AutoCreateTopics: true,
			Groups: group.Config{InitialRebalanceDelay: -1}},
	}
	if configure != nil {
		configure(&opts)
	}
	b, err := runtime.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return addr
}

func TestCLIAgainstBroker(t *testing.T) {
	brokers := []string{"--brokers", startBroker(t), "--timeout", "20s"}
	ctx := context.Background()
	topic := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := topicMain(append(args, brokers...), &out)
		return out.String(), err
	}
	mustTopic := func(args ...string) string {
		t.Helper()
		out, err := topic(args...)
		if err != nil {
			t.Fatalf("floe topic %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	consume := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := consumeMain(ctx, append(args, brokers...), &out); err != nil {
			t.Fatalf("floe consume %s: %v", strings.Join(args, " "), err)
		}
		return out.String()
	}

	if out := mustTopic("create", "cli", "--partitions", "2", "--config", "retention.ms=3600000"); !strings.Contains(out, "created topic cli: 2 partitions, replication factor 1") {
		t.Fatalf("create said %q", out)
	}
	if _, err := topic("create", "cli"); err == nil || errors.Is(err, errUsage) {
		t.Fatalf("creating an existing topic: %v, want a broker error", err)
	}
	if out := mustTopic("list"); !containsFields(out, "cli 2 1") {
		t.Fatalf("list said %q", out)
	}

	var stderr bytes.Buffer
	lines := "a:1\nb:2\nc:3\nno-key\n"
	if err := produceMain(ctx, append([]string{"cli", "--key-separator", ":", "--partition", "1", "--compression", "gzip"}, brokers...), strings.NewReader(lines), &stderr); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if !strings.Contains(stderr.String(), "produced 4 records") {
		t.Fatalf("produce said %q", stderr.String())
	}
	got := consume("cli", "--partition", "1", "--from-beginning", "--exit-at-end", "--format", "%o %k=%v")
	if got != "0 a=1\n1 b=2\n2 c=3\n3 =no-key\n" {
		t.Fatalf("consumed %q", got)
	}
	if got := consume("--offset", "-1", "cli", "--topic", "cli", "--exit-at-end", "--format", "%p:%v"); got != "1:no-key\n" {
		t.Fatalf("the last record of each partition: %q", got)
	}
	// A group commits what it printed: the second read resumes after it.
	first := consume("--topic", "cli", "--group", "g", "--from-beginning", "--count", "2")
	rest := consume("--topic", "cli", "--group", "g", "--exit-at-end")
	if first != "1\n2\n" || rest != "3\nno-key\n" {
		t.Fatalf("group read %q then %q", first, rest)
	}
	checkGroupCLI(t, brokers)
	checkConsumerGroupCLI(t, brokers)

	mustTopic("alter", "cli", "--config", "cleanup.policy=compact", "--delete-config", "retention.ms", "--partitions", "3")
	desc := mustTopic("describe", "cli")
	// Partition 1: leader 1, replicas and ISR 1, offsets 0 to 4.
	for _, want := range []string{"cleanup.policy compact topic", "1 1 2 1 1 0 4"} {
		if !containsFields(desc, want) || !strings.Contains(desc, "PARTITIONS 3") {
			t.Fatalf("describe lacks %q:\n%s", want, desc)
		}
	}
	if strings.Contains(desc, "retention.ms") {
		t.Fatalf("a deleted config is still listed as set:\n%s", desc)
	}
	if out := mustTopic("describe", "cli", "--all-configs"); !strings.Contains(out, "retention.ms") || !strings.Contains(out, "default") {
		t.Fatalf("--all-configs:\n%s", out)
	}
	if _, err := topic("alter", "cli", "--config", "retention.ms=soon"); err == nil || !strings.Contains(err.Error(), "INVALID_CONFIG") {
		t.Fatalf("a bad config value: %v", err)
	}
	if out := mustTopic("delete", "cli"); out != "deleted topic cli\n" {
		t.Fatalf("delete said %q", out)
	}
	if _, err := topic("describe", "cli"); err == nil {
		t.Fatalf("describing a deleted topic succeeded")
	}
	if out := mustTopic("delete", "cli", "--if-exists"); !strings.Contains(out, "does not exist") {
		t.Fatalf("delete --if-exists said %q", out)
	}
}

// containsFields reports whether some line of out has exactly the
// whitespace-separated fields of want.
func containsFields(out, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == want {
			return true
		}
	}
	return false
}

// checkGroupCLI runs floe group against a broker where group g has
// committed offsets 2 and 4 of topic cli's partitions and has no members.
func checkGroupCLI(t *testing.T, brokers []string) {
	t.Helper()
	group := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := groupMain(append(args, brokers...), &out)
		return out.String(), err
	}
	if out, err := group("describe", "g"); err != nil || !strings.Contains(out, "GROUP g  STATE Empty") {
		t.Fatalf("floe group describe g: %v\n%s", err, out)
	}
	if out, err := group("lag", "g"); err != nil || !containsFields(out, "g cli 1 4 4 0 -") {
		t.Fatalf("floe group lag g: %v\n%s", err, out)
	}
	// A group nobody ever used: the broker describes it as Dead with no
	// error, as Kafka does; the CLI says it is not found.
	for _, action := range []string{"describe", "lag", "delete"} {
		out, err := group(action, "g1")
		if err == nil || err.Error() != "group g1 not found" || !strings.Contains(out, "group g1 not found") || errors.Is(err, errUsage) {
			t.Errorf("floe group %s g1: %v (exit %d)\n%s", action, err, exitCode(err), out)
		}
	}
	out, err := group("describe", "g1", "g")
	if err == nil || !strings.Contains(out, "group g1 not found") || !strings.Contains(out, "GROUP g  STATE Empty") {
		t.Errorf("floe group describe g1 g: %v\n%s", err, out)
	}
	if out, err := group("delete", "g"); err != nil || out != "g\tdeleted\n" {
		t.Fatalf("floe group delete g: %v\n%s", err, out)
	}
	if _, err := group("describe", "g"); err == nil || err.Error() != "group g not found" {
		t.Fatalf("describing a deleted group: %v", err)
	}
}

// checkConsumerGroupCLI runs floe group describe on a KIP-848 group (one
// franz-go member with the server-side assignor, consuming topic cli's two
// partitions): DescribeGroups does not know it, ConsumerGroupDescribe does.
func checkConsumerGroupCLI(t *testing.T, brokers []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[1]), kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("cli"),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out bytes.Buffer
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		cl.PollFetches(ctx)
		cancel()
		out.Reset()
		err := groupMain(append([]string{"describe", "g848"}, brokers...), &out)
		if err == nil && containsFieldsSuffix(out.String(), "cli:0,1 cli:0,1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("floe group describe g848 never showed the member owning cli:0,1: %v\n%s", err, out.String())
		}
	}
	if !strings.Contains(out.String(), "PROTOCOL consumer/uniform") || !strings.Contains(out.String(), "MEMBERS 1") {
		t.Fatalf("floe group describe g848:\n%s", out.String())
	}
}

// containsFieldsSuffix reports whether some line of out ends with the
// whitespace-separated fields of want.
func containsFieldsSuffix(out, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(strings.Join(strings.Fields(line), " "), want) {
			return true
		}
	}
	return false
}
