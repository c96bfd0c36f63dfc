package sim

import (
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// memberGroup is the group the members join (the consumers' groups use
// simple commits and never join).
const memberGroup = "members"

// member is a consumer-group member: FindCoordinator, JoinGroup (with
// MEMBER_ID_REQUIRED), SyncGroup (the leader assigns), Heartbeat, commits
// with its generation, and now and then LeaveGroup and a fresh join, which
// makes the other members rebalance into a new generation.
//
// It checks the generation fence: a member that synced generation G and
// later, under the same member id, a newer generation G' commits once more
// with G, as a zombie that missed the rebalance would. The coordinator
// persisted G' before answering its SyncGroup, so it must refuse the
// commit (ILLEGAL_GENERATION, or any other error); accepting it fails the
// run.
//
// One member, the committer, also checks that an acknowledged OffsetCommit
// is durable: it alone commits (partition 0, increasing offsets), reads
// its commits back now and then (OffsetFetch), and once per run (in half
// the seeds) kills the coordinator, losing what it had not synced, the
// instant its commit is acknowledged. A read-back older than an
// acknowledged commit fails the run.
type member struct {
	r     *run
	rng   *rand.Rand
	coord netx.NodeID
	id    string
	gen   int32
	// synced: the generations this member id synced, oldest first.
	synced []int32

	committer bool
	next      int64 // the committer's next offset to commit
	acked     int64 // the largest offset acknowledged
	killAck   bool  // kill the coordinator at an acknowledgement (once)
}

const (
	memberSessionMs   = 10000
	memberRebalanceMs = 3000
)

func (m *member) start() { m.r.w.After(m.think(), m.join) }

func (m *member) think() time.Duration {
	return 50*time.Millisecond + time.Duration(m.rng.Int63n(int64(250*time.Millisecond)))
}

// again schedules fn after a pause, unless the run is healing.
func (m *member) again(fn func()) {
	if m.r.stopping {
		return
	}
	m.r.w.After(m.think(), fn)
}

// lost handles an error code common to every group request.
func (m *member) lost(code int16) {
	switch code {
	case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
		m.id, m.synced = "", nil
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
		m.coord = 0
	}
	m.again(m.join)
}

func (m *member) withCoordinator(fn func()) {
	if m.coord != 0 {
		fn()
		return
	}
	m.r.meta.findCoordinator(memberGroup, func(id netx.NodeID) {
		if id == 0 {
			m.again(func() { m.withCoordinator(fn) })
			return
		}
		m.coord = id
		fn()
	})
}

func (m *member) join() {
	m.withCoordinator(func() {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 5
		req.Group, req.MemberID = memberGroup, m.id
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = memberSessionMs, memberRebalanceMs
		req.ProtocolType = "consumer"
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{m.r.topic}
		pr := kmsg.NewJoinGroupRequestProtocol()
		pr.Name, pr.Metadata = "range", meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, pr)
		m.r.kn.call(m.coord, req, memberRebalanceMs*time.Millisecond+m.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			if err != nil {
				m.coord = 0
				m.again(m.join)
				return
			}
			jr := resp.(*kmsg.JoinGroupResponse)
			switch jr.ErrorCode {
			case 0:
			case kerr.MemberIDRequired.Code:
				m.id = jr.MemberID
				m.r.w.After(0, m.join)
				return
			default:
				m.lost(jr.ErrorCode)
				return
			}
			if jr.MemberID != m.id {
				m.synced = nil
			}
			m.id, m.gen = jr.MemberID, jr.Generation
			m.sync(jr)
		})
	})
}

func (m *member) sync(jr *kmsg.JoinGroupResponse) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 3
	req.Group, req.Generation, req.MemberID = memberGroup, m.gen, m.id
	if jr.LeaderID == m.id {
		for _, jm := range jr.Members {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID = jm.MemberID
			ca := kmsg.NewConsumerMemberAssignment()
			a.MemberAssignment = ca.AppendTo(nil)
			req.GroupAssignment = append(req.GroupAssignment, a)
		}
	}
	gen := m.gen
	m.r.kn.call(m.coord, req, m.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			m.coord = 0
			m.again(m.join)
			return
		}
		if code := resp.(*kmsg.SyncGroupResponse).ErrorCode; code != 0 {
			m.lost(code)
			return
		}
		if n := len(m.synced); n == 0 || m.synced[n-1] < gen {
			m.synced = append(m.synced, gen)
		}
		m.r.cover("group member synced a generation")
		m.again(m.stable)
	})
}

// stable is one step of a synced member: a heartbeat, a commit, a zombie
// commit with an older generation, or leaving and joining afresh.
func (m *member) stable() {
	switch k := m.rng.Intn(20); {
	case k < 2:
		m.leave()
	case k < 8 && len(m.synced) >= 2:
		m.commit(m.synced[m.rng.Intn(len(m.synced)-1)], true)
	case k < 12 && m.committer:
		m.commit(m.gen, false)
	case k < 14 && m.committer && m.acked > 0:
		m.readBack()
	default:
		m.heartbeat()
	}
}

func (m *member) heartbeat() {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 3
	req.Group, req.Generation, req.MemberID = memberGroup, m.gen, m.id
	m.r.kn.call(m.coord, req, m.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			m.coord = 0
			m.again(m.join)
			return
		}
		if code := resp.(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
			m.lost(code)
			return
		}
		m.again(m.stable)
	})
}

// commit commits offset gen (any value will do) for partition 0 with
// generation gen; stale says gen is older than a generation this member id
// has synced since.
func (m *member) commit(gen int32, stale bool) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 7
	req.Group, req.Generation, req.MemberID = memberGroup, gen, m.id
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = m.r.topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = 0, -1, -1
	if !stale {
		m.next++
		p.Offset = m.next
	}
	offset := p.Offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	latest := m.synced[len(m.synced)-1]
	m.r.kn.call(m.coord, req, m.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			m.coord = 0
			m.again(m.join)
			return
		}
		code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		switch {
		case stale && code == 0:
			m.r.inv.fail("generation-fence", "member %s committed with generation %d after it had synced generation %d: accepted",
				m.id, gen, latest)
		case stale && code == kerr.IllegalGeneration.Code:
			m.r.cover("generation fence rejected a zombie commit")
		case !stale && code == 0:
			m.acked = max(m.acked, offset)
			if m.killAck && !m.r.stopping && m.r.now() > time.Second {
				m.killAck = false
				m.killCoordinator()
				return
			}
		}
		if code != 0 && code != kerr.IllegalGeneration.Code {
			m.lost(code)
			return
		}
		m.again(m.stable)
	})
}

// killCoordinator crashes the coordinator that just acknowledged a commit,
// losing its unsynced writes, and restarts it a little later.
func (m *member) killCoordinator() {
	r, id := m.r, m.coord
	r.w.Tracef("probe: kill coordinator n%d at the acknowledgement of offset %d", id, m.acked)
	r.w.CrashWith(id, logstore.CrashLoseAll)
	r.cover("coordinator killed at a commit acknowledgement")
	r.w.After(200*time.Millisecond+time.Duration(m.rng.Int63n(int64(600*time.Millisecond))), func() {
		if !r.w.Up(id) {
			r.w.Restart(id)
		}
	})
	m.coord = 0
	m.again(m.readBack)
}

// readBack reads the committed offset of partition 0: it must be at least
// every offset acknowledged before the read began.
func (m *member) readBack() {
	want := m.acked
	m.withCoordinator(func() {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group = memberGroup
		req.RequireStable = true
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = m.r.topic, []int32{0}
		req.Topics = append(req.Topics, t)
		m.r.kn.call(m.coord, req, m.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			if err != nil {
				m.coord = 0
				m.again(m.readBack)
				return
			}
			fr := resp.(*kmsg.OffsetFetchResponse)
			code, got := fr.ErrorCode, int64(-1)
			for _, rt := range fr.Topics {
				for _, rp := range rt.Partitions {
					if code == 0 {
						code = rp.ErrorCode
					}
					got = rp.Offset
				}
			}
			switch {
			case code == kerr.UnstableOffsetCommit.Code || retriable(code):
				if code != kerr.UnstableOffsetCommit.Code {
					m.coord = 0
				}
				m.again(m.readBack)
				return
			case code != 0:
			case got < want:
				m.r.inv.fail("offset-commit-lost", "group %s partition 0: committed offset read back as %d after %d was acknowledged", memberGroup, got, want)
			default:
				m.r.cover("acknowledged commit read back")
			}
			if m.id == "" {
				m.again(m.join)
			} else {
				m.again(m.stable)
			}
		})
	})
}

func (m *member) leave() {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 3
	req.Group = memberGroup
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = m.id
	req.Members = append(req.Members, lm)
	m.r.kn.call(m.coord, req, m.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil && resp.(*kmsg.LeaveGroupResponse).ErrorCode == 0 {
			m.r.cover("group member left")
		}
		m.id, m.synced = "", nil
		m.again(m.join)
	})
}

// startProbes starts the clients that probe the contracts the history
// checkers cannot see (issue 15): a retrier (idempotence.go) and two group
// members (generation fence). Their choices come from their own
// generators, seeded from the run's seed, so the options drawn for a seed
// stay the same.
func (r *run) startProbes() {
	newRetrier(r, r.o.Seed*31+1).start()
	for i := int64(0); i < 2; i++ {
		m := &member{r: r, rng: rand.New(rand.NewSource(r.o.Seed*31 + 2 + i)), committer: i == 0}
		m.killAck = m.committer && m.rng.Intn(2) == 0
		m.start()
	}
}
