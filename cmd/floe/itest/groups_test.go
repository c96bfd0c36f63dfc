package itest

// Consumer groups with real clients (issue 6). Every test runs its own
// broker; timeouts are short (session 3s) so a run stays in seconds. Waits
// are bounded with eventually; no test asserts how fast something was.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	sessionTimeout = 3 * time.Second
	groupWait      = 30 * time.Second
)

// severable is a dialer whose connections can all be cut at once, and
// which refuses to dial afterwards: a consumer process that died without
// leaving its group.
type severable struct {
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
	dialer net.Dialer
}

func (s *severable) dial(ctx context.Context, network, host string) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		return nil, errors.New("severed")
	}
	c, err := s.dialer.DialContext(ctx, network, host)
	if err == nil {
		s.conns = append(s.conns, c)
	}
	return c, err
}

func (s *severable) sever() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = true
	for _, c := range s.conns {
		c.Close()
	}
}

// member is one franz-go group member consuming one topic.
type member struct {
	name string
	cl   *kgo.Client
	sev  *severable

	mu       sync.Mutex
	owned    map[int32]bool
	revoked  map[int32]int // times each partition was revoked (cooperative) or lost
	assigned int           // assignment callbacks seen
	records  []*kgo.Record

	stop func()
	done chan struct{}
}

type memberOpts struct {
	instance string
	balancer kgo.GroupBalancer
	session  time.Duration
	// commit: commit what each poll returned before asking for more
	// (rebalances wait for the commit: BlockRebalanceOnPoll).
	commit bool
}

// newMember starts a consumer in group g on topic and polls in the
// background until stopped.
func newMember(t *testing.T, b *broker, name, g, topic string, o memberOpts) *member {
	t.Helper()
	m := &member{name: name, sev: &severable{}, owned: map[int32]bool{}, revoked: map[int32]int{}, done: make(chan struct{})}
	session := o.session
	if session == 0 {
		session = sessionTimeout
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(b.kafkaAddr), kgo.Dialer(m.sev.dial), kgo.ClientID(name),
		kgo.ConsumerGroup(g), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(session), kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.assigned++
			for _, p := range a[topic] {
				m.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.drop(r[topic]) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.drop(r[topic]) }),
	}
	if o.instance != "" {
		opts = append(opts, kgo.InstanceID(o.instance))
	}
	if os.Getenv("FLOE_ITEST_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string { return name + " " })))
	}
	if o.balancer != nil {
		opts = append(opts, kgo.Balancers(o.balancer))
	}
	if o.commit {
		opts = append(opts, kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = func() { cancel(); <-m.done }
	go m.poll(ctx, o.commit)
	t.Cleanup(func() { m.stop(); m.sev.sever(); cl.Close() })
	return m
}

func (m *member) drop(ps []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		delete(m.owned, p)
		m.revoked[p]++
	}
}

func (m *member) poll(ctx context.Context, commit bool) {
	defer close(m.done)
	for ctx.Err() == nil {
		fs := m.cl.PollRecords(ctx, 50)
		recs := fs.Records()
		m.mu.Lock()
		m.records = append(m.records, recs...)
		m.mu.Unlock()
		if commit && len(recs) > 0 {
			_ = m.cl.CommitRecords(context.Background(), recs...)
		}
		if commit {
			m.cl.AllowRebalance()
		}
	}
}

func (m *member) ownedSet() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.owned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

func (m *member) seen() []*kgo.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*kgo.Record(nil), m.records...)
}

// balanced reports whether the members own disjoint sets covering
// partitions 0..n-1, each owning per partitions.
func balanced(ms []*member, n, per int) bool {
	seen := map[int32]bool{}
	for _, m := range ms {
		owned := m.ownedSet()
		if len(owned) != per {
			return false
		}
		for _, p := range owned {
			if seen[p] {
				return false
			}
			seen[p] = true
		}
	}
	return len(seen) == n
}

func values(prefix string, from, to int) []string {
	var vs []string
	for i := from; i < to; i++ {
		vs = append(vs, fmt.Sprintf("%s%d", prefix, i))
	}
	return vs
}

// produceSpread writes n values per partition: "<p>-<i>".
func produceSpread(t *testing.T, b *broker, topic string, partitions int32, from, to int) {
	for p := int32(0); p < partitions; p++ {
		b.produce(t, topic, p, values(fmt.Sprintf("%d-", p), from, to)...)
	}
}

// countValues tallies how many times each value was received.
func countValues(ms ...*member) map[string]int {
	n := map[string]int{}
	for _, m := range ms {
		for _, r := range m.seen() {
			n[string(r.Value)]++
		}
	}
	return n
}

func TestFranzGoThreeConsumersShareSixPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.createTopic(t, "share", 6)
	ms := []*member{
		newMember(t, b, "c1", "share-g", "share", memberOpts{}),
		newMember(t, b, "c2", "share-g", "share", memberOpts{}),
		newMember(t, b, "c3", "share-g", "share", memberOpts{}),
	}
	eventually(t, groupWait, "three members with two partitions each", func() bool { return balanced(ms, 6, 2) })
	produceSpread(t, b, "share", 6, 0, 100)
	eventually(t, groupWait, "all 600 records consumed", func() bool { return len(countValues(ms...)) == 600 })
	// No rebalance happened while consuming (one generation): every record
	// went to exactly one member, the owner of its partition.
	for v, n := range countValues(ms...) {
		if n != 1 {
			t.Fatalf("record %s handed out %d times in one generation", v, n)
		}
	}
	for _, m := range ms {
		owned := map[int32]bool{}
		for _, p := range m.ownedSet() {
			owned[p] = true
		}
		for _, r := range m.seen() {
			if !owned[r.Partition] {
				t.Fatalf("%s got a record of partition %d it does not own", m.name, r.Partition)
			}
		}
	}
	out := floe(t, "group", "describe", "--brokers", b.kafkaAddr, "share-g")
	if !strings.Contains(out, "STATE Stable") || !strings.Contains(out, "MEMBERS 3") {
		t.Fatalf("floe group describe:\n%s", out)
	}
}

// saramaHandler records claims and messages per generation.
type saramaHandler struct {
	mu     sync.Mutex
	claims map[string]string // "gen/partition" → member
	dups   []string
	msgs   map[string]string // "gen/partition/offset" → member
	values map[string]bool
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ps := range s.Claims() {
		for _, p := range ps {
			k := fmt.Sprintf("%d/%d", s.GenerationID(), p)
			if other, ok := h.claims[k]; ok && other != s.MemberID() {
				h.dups = append(h.dups, "claim "+k)
			}
			h.claims[k] = s.MemberID()
		}
	}
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		h.mu.Lock()
		k := fmt.Sprintf("%d/%d/%d", s.GenerationID(), msg.Partition, msg.Offset)
		if other, ok := h.msgs[k]; ok && other != s.MemberID() {
			h.dups = append(h.dups, "record "+k)
		}
		h.msgs[k] = s.MemberID()
		h.values[string(msg.Value)] = true
		h.mu.Unlock()
		s.MarkMessage(msg, "")
	}
	return nil
}

func TestSaramaThreeConsumersShareSixPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.createTopic(t, "sshare", 6)
	produceSpread(t, b, "sshare", 6, 0, 100)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Session.Timeout = sessionTimeout
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	h := &saramaHandler{claims: map[string]string{}, msgs: map[string]string{}, values: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		g, err := sarama.NewConsumerGroup([]string{b.kafkaAddr}, "sshare-g", cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{"sshare"}, h); err != nil && ctx.Err() == nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
		t.Cleanup(func() { g.Close() })
	}
	defer func() { cancel(); wg.Wait() }()
	eventually(t, groupWait, "all 600 records consumed", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.values) == 600
	})
	eventually(t, groupWait, "a stable generation of three members", func() bool {
		d, err := b.admin(t).DescribeGroups(context.Background(), "sshare-g")
		return err == nil && d["sshare-g"].State == "Stable" && len(d["sshare-g"].Members) == 3
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.dups) > 0 {
		t.Fatalf("handed to two members in one generation: %v", h.dups)
	}
}

// TestMemberLeavesOrDiesGroupResumesFromCommits: three members commit
// after each poll. One leaves (LeaveGroup) or dies (its connections cut,
// no LeaveGroup: its session must expire); the others take its partitions
// and resume exactly from its committed offsets: nothing is lost, nothing
// read twice (it committed everything it read before going).
func TestMemberLeavesOrDiesGroupResumesFromCommits(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"leave", "die"} {
		t.Run(how, func(t *testing.T) {
			b := startBroker(t)
			b.createTopic(t, "res", 6)
			g := "res-" + how
			ms := []*member{
				newMember(t, b, "a", g, "res", memberOpts{commit: true}),
				newMember(t, b, "b", g, "res", memberOpts{commit: true}),
				newMember(t, b, "c", g, "res", memberOpts{commit: true}),
			}
			eventually(t, groupWait, "three balanced members", func() bool { return balanced(ms, 6, 2) })
			produceSpread(t, b, "res", 6, 0, 50)
			eventually(t, groupWait, "first 300 records", func() bool { return len(countValues(ms...)) == 300 })
			gone := ms[2]
			gone.stop() // its last poll's commit is done
			start := time.Now()
			if how == "leave" {
				gone.cl.Close()
			} else {
				gone.sev.sever()
			}
			rest := ms[:2]
			eventually(t, groupWait, "the two others owning all six partitions", func() bool { return balanced(rest, 6, 3) })
			t.Logf("%s: rebalanced without the member after %v (session timeout %v)", how, time.Since(start).Round(10*time.Millisecond), sessionTimeout)
			produceSpread(t, b, "res", 6, 50, 100)
			eventually(t, groupWait, "all 600 records", func() bool { return len(countValues(ms...)) == 600 })
			for v, n := range countValues(ms...) {
				if n != 1 {
					t.Fatalf("record %s read %d times; the member committed all it read", v, n)
				}
			}
		})
	}
}

func TestCooperativeStickyKeepsUnaffectedPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.createTopic(t, "coop", 6)
	opts := memberOpts{balancer: kgo.CooperativeStickyBalancer()}
	m1 := newMember(t, b, "m1", "coop-g", "coop", opts)
	m2 := newMember(t, b, "m2", "coop-g", "coop", opts)
	eventually(t, groupWait, "two members with three partitions", func() bool { return balanced([]*member{m1, m2}, 6, 3) })
	before := map[*member][]int32{m1: m1.ownedSet(), m2: m2.ownedSet()}
	m3 := newMember(t, b, "m3", "coop-g", "coop", opts)
	all := []*member{m1, m2, m3}
	eventually(t, groupWait, "three members with two partitions", func() bool { return balanced(all, 6, 2) })
	moved := map[int32]bool{}
	for _, m := range []*member{m1, m2} {
		after := map[int32]bool{}
		for _, p := range m.ownedSet() {
			after[p] = true
		}
		m.mu.Lock()
		for _, p := range before[m] {
			if after[p] && m.revoked[p] > 0 {
				t.Errorf("%s: partition %d was revoked although it stayed with it", m.name, p)
			}
			if !after[p] {
				moved[p] = true
				if m.revoked[p] != 1 {
					t.Errorf("%s: moved partition %d revoked %d times, want 1", m.name, p, m.revoked[p])
				}
			}
		}
		m.mu.Unlock()
	}
	for _, p := range m3.ownedSet() {
		if !moved[p] {
			t.Errorf("m3 got partition %d, which nobody gave up", p)
		}
	}
	if len(moved) != 2 {
		t.Errorf("%d partitions moved, want 2", len(moved))
	}
}

// TestStaticMemberRestartCausesNoRebalance restarts a static follower
// within its session timeout: it gets its partitions back and the other
// member sees no rebalance. (A restarted static *leader* is told to skip
// the assignment, KIP-814; franz-go then recomputes the plan from the
// members' metadata and, with cooperative-sticky, may rejoin on purpose;
// Kafka behaves the same. node/group's unit tests cover the broker side.)
func TestStaticMemberRestartCausesNoRebalance(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.createTopic(t, "static", 6)
	opts := func(inst string) memberOpts { return memberOpts{instance: inst, session: 4 * time.Second} }
	lead := newMember(t, b, "lead", "static-g", "static", opts("lead"))
	eventually(t, groupWait, "the first member (the leader) owning everything", func() bool { return len(lead.ownedSet()) == 6 })
	f := newMember(t, b, "f", "static-g", "static", opts("f"))
	eventually(t, groupWait, "two static members with three partitions", func() bool { return balanced([]*member{lead, f}, 6, 3) })
	snapshot := func(m *member) (int32, int, int) {
		_, gen := m.cl.GroupMetadata()
		m.mu.Lock()
		defer m.mu.Unlock()
		revoked := 0
		for _, n := range m.revoked {
			revoked += n
		}
		return gen, m.assigned, revoked
	}
	gen, assigned, revoked := snapshot(lead)
	owned := f.ownedSet()

	// f restarts: a static member closing sends no LeaveGroup; its new
	// incarnation joins with the same instance id.
	f.stop()
	f.cl.Close()
	f2 := newMember(t, b, "f2", "static-g", "static", opts("f"))
	eventually(t, groupWait, "the restarted member owning its old partitions", func() bool {
		return fmt.Sprint(f2.ownedSet()) == fmt.Sprint(owned)
	})
	// Past the old incarnation's session timeout nothing has moved.
	time.Sleep(5 * time.Second)
	gen2, assigned2, revoked2 := snapshot(lead)
	if gen2 != gen || assigned2 != assigned || revoked2 != revoked {
		t.Fatalf("the leader saw a rebalance: generation %d → %d, assignments %d → %d, revocations %d → %d", gen, gen2, assigned, assigned2, revoked, revoked2)
	}
	if _, g := f2.cl.GroupMetadata(); g != gen {
		t.Fatalf("restarted member in generation %d, want %d", g, gen)
	}
}

func TestKcatConsumesAsGroupMember(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (make deps installs it)")
	}
	b := startBroker(t)
	b.createTopic(t, "kc", 2)
	produceSpread(t, b, "kc", 2, 0, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", "-b", b.kafkaAddr, "-G", "kc-g", "-o", "beginning", "-q", "-u", "-f", "%p %o %s\n", "kc")
	var out strings.Builder
	var outMu sync.Mutex
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			outMu.Lock()
			out.Write(buf[:n])
			outMu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	eventually(t, groupWait, "kcat printing all 20 records", func() bool {
		outMu.Lock()
		defer outMu.Unlock()
		return strings.Count(out.String(), "\n") >= 20
	})
	d, err := b.admin(t).DescribeGroups(context.Background(), "kc-g")
	if err != nil || d["kc-g"].State != "Stable" || len(d["kc-g"].Members) != 1 {
		t.Fatalf("group while kcat runs: %+v %v", d["kc-g"], err)
	}
	_ = cmd.Process.Signal(sigterm)
	_ = cmd.Wait()
	pw.Close()
	outMu.Lock()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	outMu.Unlock()
	if len(lines) != 20 {
		t.Fatalf("kcat printed %d records, want 20:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// kcat commits what it consumed when it closes.
	eventually(t, groupWait, "kcat's offsets committed", func() bool {
		offs, err := b.admin(t).FetchOffsets(context.Background(), "kc-g")
		if err != nil {
			return false
		}
		o0, ok0 := offs.Lookup("kc", 0)
		o1, ok1 := offs.Lookup("kc", 1)
		return ok0 && ok1 && o0.At == 10 && o1.At == 10
	})
}

// crashAfterPolls consumes one partition in batches, processing and
// committing in the given order, and "crashes" (connections cut, no
// commit, no leave) in the middle of the 4th batch. It returns what it
// processed and the crashed batch.
func crashAfterPolls(t *testing.T, b *broker, g, topic string, commitFirst bool) (processed map[string]int, crashed []*kgo.Record) {
	t.Helper()
	sev := &severable{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.kafkaAddr), kgo.Dialer(sev.dial),
		kgo.ConsumerGroup(g), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(sessionTimeout), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	processed = map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), groupWait)
	defer cancel()
	for batch := 1; ; batch++ {
		var recs []*kgo.Record
		for len(recs) == 0 {
			if ctx.Err() != nil {
				t.Fatal("no records to poll")
			}
			recs = cl.PollRecords(ctx, 10).Records()
		}
		commit := func() {
			if err := cl.CommitRecords(ctx, recs...); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		process := func() {
			for _, r := range recs {
				processed[string(r.Value)]++
			}
		}
		if batch == 4 {
			// The crash point: between processing and committing.
			if commitFirst {
				commit()
			} else {
				process()
			}
			sev.sever()
			return processed, recs
		}
		if commitFirst {
			commit()
			process()
		} else {
			process()
			commit()
		}
	}
}

// TestDeliveryGuaranteesAcrossConsumerCrash shows at-least-once (process,
// then commit) and at-most-once (commit, then process): a consumer crashes
// between the two steps of its 4th batch; its replacement resumes from the
// committed offset. The duplicates (at-least-once) or losses (at-most-once)
// are exactly the crashed batch, and there is nothing else.
func TestDeliveryGuaranteesAcrossConsumerCrash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		commitFirst bool
	}{{"at-least-once", false}, {"at-most-once", true}} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t)
			topic, g := "dg-"+tc.name, "dg-g-"+tc.name
			b.createTopic(t, topic, 1)
			all := values("v", 0, 100)
			b.produce(t, topic, 0, all...)
			first, crashed := crashAfterPolls(t, b, g, topic, tc.commitFirst)

			next := newMember(t, b, "next", g, topic, memberOpts{commit: true})
			eventually(t, groupWait, "the replacement reading to the end", func() bool {
				for _, r := range next.seen() {
					if string(r.Value) == "v99" {
						return true
					}
				}
				return false
			})
			seen := map[string]int{}
			for v, n := range first {
				seen[v] += n
			}
			for _, r := range next.seen() {
				seen[string(r.Value)]++
			}
			var dups, lost []string
			for _, v := range all {
				switch n := seen[v]; {
				case n == 0:
					lost = append(lost, v)
				case n > 1:
					dups = append(dups, v)
				}
			}
			want := make([]string, len(crashed))
			for i, r := range crashed {
				want[i] = string(r.Value)
			}
			sort.Strings(want)
			sort.Strings(dups)
			sort.Strings(lost)
			if tc.commitFirst {
				if len(dups) != 0 || fmt.Sprint(lost) != fmt.Sprint(want) {
					t.Fatalf("at-most-once: lost %v (want exactly the crashed batch %v), duplicates %v (want none)", lost, want, dups)
				}
			} else if len(lost) != 0 || fmt.Sprint(dups) != fmt.Sprint(want) {
				t.Fatalf("at-least-once: duplicates %v (want exactly the crashed batch %v), lost %v (want none)", dups, want, lost)
			}
			t.Logf("%s: crashed batch of %d records", tc.name, len(crashed))
		})
	}
}

func TestCommittedOffsetsSurviveBrokerRestart(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.createTopic(t, "dur", 2)
	produceSpread(t, b, "dur", 2, 0, 50)
	m := newMember(t, b, "d1", "dur-g", "dur", memberOpts{commit: true})
	eventually(t, groupWait, "100 records consumed", func() bool { return len(countValues(m)) == 100 })
	m.stop()
	m.cl.Close()
	check := func(when string) {
		t.Helper()
		eventually(t, groupWait, "committed offsets "+when, func() bool {
			offs, err := b.admin(t).FetchOffsets(context.Background(), "dur-g")
			if err != nil {
				return false
			}
			o0, ok0 := offs.Lookup("dur", 0)
			o1, ok1 := offs.Lookup("dur", 1)
			return ok0 && ok1 && o0.At == 50 && o1.At == 50
		})
	}
	check("before restart")
	b.stop()
	b.restart()
	check("after a clean restart")
	b.kill()
	b.restart()
	check("after kill -9")
	// A new member resumes exactly after the committed offsets.
	produceSpread(t, b, "dur", 2, 50, 60)
	m2 := newMember(t, b, "d2", "dur-g", "dur", memberOpts{commit: true})
	eventually(t, groupWait, "the 20 new records", func() bool { return len(countValues(m2)) == 20 })
	time.Sleep(500 * time.Millisecond)
	for _, r := range m2.seen() {
		if r.Offset < 50 {
			t.Fatalf("re-read %s at offset %d below the committed 50", r.Value, r.Offset)
		}
	}
}

func TestSlowConsumerLagInCLIAndMetrics(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.createTopic(t, "lag", 1)
	b.produce(t, "lag", 0, values("x", 0, 100)...)
	cl := b.client(t, kgo.ConsumerGroup("lag-g"), kgo.ConsumeTopics("lag"), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(sessionTimeout), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	// The slow consumer processes 40 records, commits them, and stalls
	// (it stays in the group: its client keeps heartbeating).
	var got []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), groupWait)
	defer cancel()
	for len(got) < 40 {
		got = append(got, cl.PollRecords(ctx, 40-len(got)).Records()...)
		if ctx.Err() != nil {
			t.Fatal("could not consume 40 records")
		}
	}
	if err := cl.CommitRecords(ctx, got...); err != nil {
		t.Fatal(err)
	}
	out := floe(t, "group", "lag", "--brokers", b.kafkaAddr, "lag-g")
	if !regexp.MustCompile(`(?m)^lag-g\s+lag\s+0\s+40\s+100\s+60\s`).MatchString(out) {
		t.Fatalf("floe group lag does not show 40 committed of 100, lag 60:\n%s", out)
	}
	resp, err := http.Get("http://" + b.adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`floe_consumer_group_lag\{group="lag-g",partition="0",topic="lag"\} 60\b`).Match(body) {
		t.Fatalf("metrics do not show lag 60 for lag-g:\n%s", grepLines(string(body), "floe_consumer_group"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
