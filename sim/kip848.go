package sim

// The KIP-848 consumer group workload (issue 19): Options.KIP848Members
// members of one group heartbeat with ConsumerGroupHeartbeat, take the
// partitions of the sim topic they are assigned, give up the ones a
// response drops at once, fetch each new partition's committed offset and
// commit their positions with their member epoch. Now and then a member
// leaves (it releases its partitions, then sends the leave, as Kafka's
// consumer does), or crashes (stops without a word). One operation per member at
// a time, as a real consumer that commits before it acknowledges a
// revocation.
//
// A member holds its partitions only while its session can be alive: from
// the moment it sent its last successful heartbeat for one session
// timeout (the coordinator fences it no earlier than that after
// processing it), after which it drops them as a real client does.
//
// Checkers (violations "checker: kip848 ... invalid"):
//   - ownership: when a member takes a partition, no other member holds
//     it (what each believes: a partition is never owned twice, in any
//     epoch, once revocations are honoured);
//   - offsets: an acknowledged commit of a partition is never below an
//     earlier acknowledged commit or fetch of it, and a fetch never reads
//     below an earlier acknowledged commit (committed offsets never go
//     back).

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// kip848Session is the session timeout the sim's brokers give consumer
// group members (broker.go); members drop their partitions when it lapses.
const (
	kip848Session  = 1500 * time.Millisecond
	kip848Interval = 100 * time.Millisecond
)

const kip848Group = "k848"

// Coverage paths of the workload (coverage.go).
const (
	covKIP848Assigned  = "kip848 member took a partition"
	covKIP848Committed = "kip848 commit with a member epoch acknowledged"
	covKIP848Fenced    = "kip848 member fenced"
)

type kip848Workload struct {
	r       *run
	members []*kip848Member
	// classics are the group's classic members (kip848_classic.go).
	classics []*kip848Classic
	// floor is, per partition, the highest offset an acknowledged commit
	// wrote or a fetch read: nothing acknowledged later may be below it.
	floor   map[int32]int64
	nextID  int
	commits int
	// topicID is the sim topic's id, learned from the first assignment
	// (the members subscribe to that topic only).
	topicID [16]byte
	knownID bool
}

func ownedParts(set map[int32]bool) []int32 {
	out := make([]int32, 0, len(set))
	for p := range set { //floe:unordered sorted below
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// kip848Client is what both kinds of member (consumer-protocol and
// classic) share: what it owns, where it reads, its coordinator, and its
// next step.
type kip848Client struct {
	w     *kip848Workload
	owned map[int32]bool
	pos   map[int32]int64 // next offset to commit, per owned partition with a fetched start
	coord netx.NodeID
	lease time.Duration // owns its partitions until then
	// claim is how long the checker counts the member as owning its
	// partitions: the lease in the coordinator's time. The coordinator
	// times the session and the revocation on its own clock, which may
	// run fast (clock drift, up to maxRate), so in true time it may fence
	// the member and move its partitions that much sooner, as Kafka's
	// protocol allows (the fenced member is a zombie its epoch fences).
	claim time.Duration
	step  func()
	// instance is its group.instance.id (with classic members in the
	// group; nil: dynamic): a crashed process comes back under it.
	instance *string
}

func newKIP848Client(w *kip848Workload) kip848Client {
	return kip848Client{w: w, owned: map[int32]bool{}, pos: map[int32]int64{}}
}

func (c *kip848Client) again(d time.Duration) { c.w.r.w.After(d, c.step) }

// awake reports whether the run still steps the member; first, once its
// lease has run out, it lets go of what it owns (drop names the member).
func (c *kip848Client) awake(drop func(why string), why string) bool {
	r := c.w.r
	if r.stopping {
		return false
	}
	if r.now() >= c.lease && len(c.owned) > 0 {
		drop(why)
	}
	return true
}

// ask sends req to the coordinator and hands fn the answer; a call that
// fails (no answer, a lost link) forgets the coordinator and steps again
// after a backoff, as every request of both kinds of member does.
func (c *kip848Client) ask(req kmsg.Request, timeout time.Duration, fn func(kmsg.Response)) {
	r := c.w.r
	r.kn.callAt(c.coord, req, timeout, nil, func(resp kmsg.Response, err error, _ bool) {
		if err != nil {
			c.coord = 0
			c.again(r.backoff())
			return
		}
		fn(resp)
	})
}

// withCoordinator runs fn once the group's coordinator is known.
func (c *kip848Client) withCoordinator(fn func()) {
	r := c.w.r
	if c.coord != 0 {
		fn()
		return
	}
	r.meta.findCoordinator(kip848Group, func(id netx.NodeID) {
		if id == 0 {
			c.again(r.backoff())
			return
		}
		c.coord = id
		fn()
	})
}

type kip848Member struct {
	kip848Client
	id    string
	epoch int32
	// revokeBy bounds the lease while a revocation is unacknowledged: the
	// coordinator fences a member that does not acknowledge within its
	// rebalance timeout of the heartbeat that asked (0: none pending).
	revokeBy  time.Duration
	droppedAt time.Duration
	beats     int
}

const kip848Rebalance = 3000 * time.Millisecond

func (r *run) startKIP848() {
	if r.o.KIP848Members <= 0 && r.o.KIP848Classic <= 0 {
		return
	}
	w := &kip848Workload{r: r, floor: map[int32]int64{}}
	// With classic members, the consumer-protocol members start later, so
	// the group is first a classic group whose members own partitions and
	// is then upgraded online (kip848_classic.go).
	late := time.Duration(0)
	if r.o.KIP848Classic > 0 {
		late = 1500 * time.Millisecond
	}
	// With classic members every member is static, and a crashed one
	// may come back speaking the other protocol (restart).
	static := func(i int) *string {
		if r.o.KIP848Classic == 0 {
			return nil
		}
		return kmsg.StringPtr(fmt.Sprintf("k848-s%d", i))
	}
	for i := 0; i < r.o.KIP848Members; i++ {
		m := w.newMember()
		m.instance = static(i)
		w.members = append(w.members, m)
		r.w.After(late+r.think(), m.step)
	}
	for i := 0; i < r.o.KIP848Classic; i++ {
		m := w.newClassic()
		m.instance = static(r.o.KIP848Members + i)
		w.classics = append(w.classics, m)
		r.w.After(r.think(), m.step)
	}
}

// covKIP848Switched: a static member's process came back speaking the
// other protocol under the same instance id (a rolling upgrade or
// downgrade; the last consumer-protocol member replaced by a classic one
// downgrades the group, node/group/migrate.go).
const covKIP848Switched = "kip848 static member restarted with the other protocol"

// restart starts a crashed member's next process: a static one comes back
// under its instance id, half the time speaking the other protocol.
func (c *kip848Client) restart(self any, same func()) {
	w := c.w
	if c.instance == nil || w.r.rng.Intn(2) == 0 {
		same()
		return
	}
	w.r.cover(covKIP848Switched)
	var start func()
	if m, ok := self.(*kip848Member); ok {
		w.members = removeFrom(w.members, m)
		n := w.newClassic()
		n.instance = c.instance
		w.classics = append(w.classics, n)
		start = n.step
	} else {
		w.classics = removeFrom(w.classics, self.(*kip848Classic))
		n := w.newMember()
		n.instance = c.instance
		w.members = append(w.members, n)
		start = n.step
	}
	w.r.w.Tracef("kip848: instance %s restarts with the other protocol", *c.instance)
	w.r.w.After(w.r.backoff(), start)
}

// crashPercent is the chance, per step, that the member's process
// crashes: static members (with classic members in the group) crash more
// often, so their restarts with the other protocol (restart) upgrade and
// downgrade the group now and then.
func (c *kip848Client) crashPercent() int {
	if c.instance != nil {
		return 6
	}
	return 1
}

func removeFrom[T comparable](list []T, x T) []T {
	out := list[:0]
	for _, o := range list {
		if o != x {
			out = append(out, o)
		}
	}
	return out
}

// holderName names a member other than self (classic or not) that
// believes it owns p now, or "".
func (w *kip848Workload) holderName(self any, p int32) string {
	if o := w.holder(self, p); o != nil {
		return fmt.Sprintf("%s (epoch %d)", o.id, o.epoch)
	}
	now := w.r.now()
	for _, o := range w.classics {
		if any(o) != self && o.owned[p] && now < o.claim {
			return fmt.Sprintf("classic %s (%s, generation %d)", o.name, o.id, o.gen)
		}
	}
	return ""
}

func (w *kip848Workload) newMember() *kip848Member {
	w.nextID++
	m := &kip848Member{kip848Client: newKIP848Client(w), id: fmt.Sprintf("k848-m%d", w.nextID)}
	m.kip848Client.step = m.step
	return m
}

// holds reports whether another member than m believes it owns p now.
func (w *kip848Workload) holder(self any, p int32) *kip848Member {
	now := w.r.now()
	for _, o := range w.members {
		if any(o) != self && o.owned[p] && now < o.claim {
			return o
		}
	}
	return nil
}

// step is the member's next operation.
func (m *kip848Member) step() {
	r := m.w.r
	if !m.awake(m.drop, "its session lapsed") {
		return
	}
	crash := m.crashPercent()
	switch n := r.rng.Intn(100); {
	case m.epoch > 0 && (n < crash || m.instance != nil && m.beats == 1 && n < 30):
		// crash: a new process, a new member id; a static member also
		// crashes right after its first heartbeat now and then (a crash
		// loop), while the partitions it was given may still be on
		// their way from their owners
		m.drop("it crashed")
		m.restart(m, m.replace)
		return
	case m.epoch > 0 && n == crash:
		m.leave()
		return
	case m.epoch > 0 && len(m.owned) > 0 && n < 35:
		m.commit()
		return
	}
	m.heartbeat(m.epoch)
}

func (m *kip848Member) drop(why string) { m.dropAs(m.id, why) }

// dropAs forgets what the member owns; who names it in the trace.
func (c *kip848Client) dropAs(who, why string) {
	if len(c.owned) > 0 {
		c.w.r.w.Tracef("kip848: %s drops %v: %s", who, ownedParts(c.owned), why)
	}
	c.owned, c.pos = map[int32]bool{}, map[int32]int64{}
}

// replace starts a new member in m's place (m stops).
func (m *kip848Member) replace() {
	n := m.w.newMember()
	n.instance = m.instance
	replaceIn(m.w, m.w.members, m, n, n.step)
}

// replaceIn puts n in old's place in list and starts it (step) after a
// backoff.
func replaceIn[T comparable](w *kip848Workload, list []T, old, n T, step func()) {
	for i, o := range list {
		if o == old {
			list[i] = n
		}
	}
	w.r.w.After(w.r.backoff(), step)
}

// leave closes the member as a Kafka consumer does: it releases its
// partitions before it sends the leave heartbeat (epoch -1), and does not
// wait for the answer (the Java client's leaveGroup runs
// onPartitionsRevoked and clears its assignment first, and sends the
// leave best effort). The coordinator frees the partitions as it takes
// the leave, without asking the member again, so a member that kept them
// until an answer that may be lost would hold them while another member
// is given them (campaign seed 900020). Whatever becomes of the leave,
// this process is done and a new member takes its place.
func (m *kip848Member) leave() {
	r := m.w.r
	m.drop("it leaves")
	m.lease, m.claim, m.revokeBy = 0, 0, 0
	if m.coord == 0 {
		m.replace()
		return
	}
	req := m.heartbeatRequest(-1)
	r.kn.callAt(m.coord, req, r.o.RequestTimeout, nil, func(kmsg.Response, error, bool) {})
	m.replace()
}

func (m *kip848Member) heartbeat(epoch int32) {
	m.withCoordinator(func() {
		r := m.w.r
		req := m.heartbeatRequest(epoch)
		sent := r.now()
		m.ask(req, r.o.RequestTimeout, func(resp kmsg.Response) {
			hr := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
			m.answered(epoch, sent, hr)
		})
	})
}

// heartbeatRequest is the member's heartbeat at epoch, reporting what it
// owns.
func (m *kip848Member) heartbeatRequest(epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = kip848Group, m.id, epoch
	req.InstanceID = m.instance
	req.RebalanceTimeoutMillis = int32(kip848Rebalance / time.Millisecond)
	if epoch == 0 {
		req.SubscribedTopicNames = []string{m.w.r.topic}
		return req
	}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if m.w.knownID && len(m.owned) > 0 {
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID, t.Partitions = m.w.topicID, ownedParts(m.owned)
		req.Topics = append(req.Topics, t)
	}
	return req
}

func (m *kip848Member) answered(epoch int32, sent time.Duration, hr *kmsg.ConsumerGroupHeartbeatResponse) {
	r := m.w.r
	switch hr.ErrorCode {
	case 0:
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		r.cover(covKIP848Fenced)
		m.drop("fenced: " + errName(hr.ErrorCode))
		m.epoch = 0
		m.again(r.backoff())
		return
	default:
		if hr.ErrorCode == kerr.NotCoordinator.Code || hr.ErrorCode == kerr.CoordinatorNotAvailable.Code {
			m.coord = 0
		}
		m.again(r.backoff())
		return
	}
	if sent+kip848Session <= r.now() {
		m.drop("the answer came after its session")
		m.epoch = 0
		m.again(r.backoff())
		return
	}
	if m.revokeBy != 0 && sent > m.droppedAt {
		m.revokeBy = 0 // this heartbeat reported the partitions gone
	}
	m.lease, m.epoch = sent+kip848Session, hr.MemberEpoch
	if m.revokeBy != 0 {
		m.lease = min(m.lease, m.revokeBy)
	}
	if hr.Assignment != nil {
		next := map[int32]bool{}
		for _, t := range hr.Assignment.Topics {
			if !m.w.knownID {
				m.w.topicID, m.w.knownID = t.TopicID, true
			}
			if t.TopicID != m.w.topicID {
				continue
			}
			for _, p := range t.Partitions {
				next[p] = true
			}
		}
		for _, p := range ownedParts(m.owned) {
			if !next[p] {
				delete(m.owned, p)
				delete(m.pos, p)
				if m.revokeBy == 0 {
					m.revokeBy = sent + kip848Rebalance
					m.lease = min(m.lease, m.revokeBy)
				}
				m.droppedAt = r.now()
			}
		}
		for _, p := range ownedParts(next) {
			if m.owned[p] {
				continue
			}
			if o := m.w.holderName(m, p); o != "" {
				r.violation("checker", fmt.Sprintf("kip848 ownership invalid: %s/%d given to %s (epoch %d) while %s still owns it",
					r.topic, p, m.id, m.epoch, o))
			}
			m.owned[p] = true
			r.cover(covKIP848Assigned)
		}
	}
	k := m.w.maxRate()
	m.claim = sent + time.Duration(float64(kip848Session)/k)
	if m.revokeBy != 0 {
		m.claim = min(m.claim, m.revokeBy-kip848Rebalance+time.Duration(float64(kip848Rebalance)/k))
	}
	m.beats++
	if missing := m.unpositioned(); len(missing) > 0 {
		m.fetch(missing)
		return
	}
	m.again(kip848Interval)
}

func (m *kip848Member) unpositioned() []int32 {
	var out []int32
	for _, p := range ownedParts(m.owned) {
		if _, ok := m.pos[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// fetch reads the committed offsets of newly owned partitions.
func (m *kip848Member) fetch(parts []int32) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 9
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.MemberID, g.MemberEpoch = kip848Group, kmsg.StringPtr(m.id), m.epoch
	t := kmsg.NewOffsetFetchRequestGroupTopic()
	t.Topic, t.Partitions = m.w.r.topic, parts
	g.Topics = append(g.Topics, t)
	req.Groups = append(req.Groups, g)
	m.fetchOffsets(req, m.id)
}

// fetchOffsets sends an OffsetFetch of owned partitions (require_stable)
// and starts each at its committed offset; who names the member in a
// violation. A fetch must not read below an acknowledged commit.
func (c *kip848Client) fetchOffsets(req *kmsg.OffsetFetchRequest, who string) {
	r := c.w.r
	req.RequireStable = true
	invoked := c.w.floorsNow()
	c.ask(req, r.o.RequestTimeout, func(resp kmsg.Response) {
		fr := resp.(*kmsg.OffsetFetchResponse)
		if len(fr.Groups) != 1 || fr.Groups[0].ErrorCode != 0 {
			c.again(r.backoff())
			return
		}
		for _, rt := range fr.Groups[0].Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 || !c.owned[rp.Partition] {
					continue
				}
				if rp.Offset >= 0 {
					if f, ok := invoked[rp.Partition]; ok && rp.Offset < f {
						r.violation("checker", fmt.Sprintf("kip848 offsets invalid: %s fetched %s/%d at %d, below the %d committed before",
							who, r.topic, rp.Partition, rp.Offset, f))
					}
					c.w.raise(rp.Partition, rp.Offset)
				}
				c.pos[rp.Partition] = max(rp.Offset, 0)
			}
		}
		c.again(kip848Interval)
	})
}

func (w *kip848Workload) floorsNow() map[int32]int64 {
	out := make(map[int32]int64, len(w.floor))
	for p, f := range w.floor { //floe:unordered copies a map
		out[p] = f
	}
	return out
}

func (w *kip848Workload) raise(p int32, off int64) {
	if cur, ok := w.floor[p]; !ok || off > cur {
		w.floor[p] = off
	}
}

// commit commits the positions of the owned partitions with the member
// epoch (OffsetCommit v9).
func (m *kip848Member) commit() {
	m.commitOffsets(9, m.id, m.epoch, m.id, func() string { return fmt.Sprintf("epoch %d", m.epoch) }, func() { m.heartbeat(m.epoch) })
}

// commitOffsets commits the owned partitions' positions, each moved on a
// little (as a consumer's position moves as it reads), as member at
// generation gen, then runs next (at once when no partition has a
// position yet). who and tag name the member and its generation in a
// violation: an acknowledged commit must not be below an earlier one.
func (c *kip848Client) commitOffsets(version int16, member string, gen int32, who string, tag func() string, next func()) {
	r := c.w.r
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation = kip848Group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = r.topic
	offs := map[int32]int64{}
	for _, p := range ownedParts(c.owned) {
		pos, ok := c.pos[p]
		if !ok {
			continue
		}
		pos += int64(r.rng.Intn(3))
		c.pos[p], offs[p] = pos, pos
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.LeaderEpoch = p, pos, -1
		t.Partitions = append(t.Partitions, cp)
	}
	if len(t.Partitions) == 0 {
		next()
		return
	}
	req.Topics = append(req.Topics, t)
	invoked := c.w.floorsNow()
	c.w.commits++
	c.ask(req, r.o.RequestTimeout, func(resp kmsg.Response) {
		for _, rt := range resp.(*kmsg.OffsetCommitResponse).Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					continue
				}
				r.cover(covKIP848Committed)
				off := offs[rp.Partition]
				if f, ok := invoked[rp.Partition]; ok && off < f {
					r.violation("checker", fmt.Sprintf("kip848 offsets invalid: %s committed %s/%d at %d (%s), below the %d committed before",
						who, r.topic, rp.Partition, off, tag(), f))
				}
				c.w.raise(rp.Partition, off)
			}
		}
		next()
	})
}

// maxRate is the fastest a node's clock may run against true time in this
// run (faults_more.go drift): 1 without drift.
func (w *kip848Workload) maxRate() float64 {
	mo := w.r.o.Faults.More
	switch {
	case mo.Drift <= 0:
		return 1
	case mo.DriftUnsafe:
		return 2.5
	default:
		return math.Sqrt(mo.DriftRatio)
	}
}
