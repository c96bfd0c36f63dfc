package sim

// Classic members in the KIP-848 group (online migration, issue 19):
// Options.KIP848Classic members of the same group speak the classic
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit with
// their generation), eagerly: a member gives up everything it owns before
// it sends a JoinGroup, and owns what its last SyncGroup gave it. While
// the group is classic (the first member to join was classic, or every
// consumer-protocol member left and it was downgraded) the leader assigns
// the sim topic's partitions round robin over the members; once a
// consumer-protocol member joins, the coordinator upgrades the group and
// assigns them itself, the classic members rejoining when told to.
//
// A classic member holds its partitions only while the coordinator cannot
// have moved them: from its last successful Heartbeat or SyncGroup for the
// shorter of its session and rebalance timeouts (a classic rebalance
// drops a member that did not rejoin within the rebalance timeout; a
// consumer group fences one that does not rejoin within it once told to).
//
// The workload's checkers cover both kinds of member: no partition is
// taken while any member (classic or not) holds it, and committed offsets
// never go back (a stale generation's commit must be refused).

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	kip848ClassicSession = 6000 * time.Millisecond // the brokers' group.min.session.timeout.ms
	kip848ClassicHold    = kip848Rebalance         // min(session, rebalance timeout)
)

// Coverage paths of the classic members.
const (
	covKIP848ClassicAssigned = "kip848 classic member took a partition"
	covKIP848ClassicInCG     = "kip848 classic member synced inside a consumer group"
	covKIP848ClassicLed      = "kip848 classic member led a classic generation"
)

type kip848Classic struct {
	kip848Client
	name string
	id   string
	gen  int32
	// joined: it has a generation it may heartbeat and commit with.
	joined bool
}

func chooseKIP848Classic(seed int64, consumers int) int {
	if consumers == 0 {
		return 0
	}
	rng := rand.New(rand.NewSource(seed ^ 0xc1a551c))
	return rng.Intn(3)
}

func (w *kip848Workload) newClassic() *kip848Classic {
	w.nextID++
	m := &kip848Classic{kip848Client: newKIP848Client(w), name: fmt.Sprintf("k848-c%d", w.nextID)}
	m.kip848Client.step = m.step
	return m
}

func (m *kip848Classic) drop(why string) {
	m.dropAs(fmt.Sprintf("classic %s (%s)", m.name, m.id), why)
}

func (m *kip848Classic) replace() {
	n := m.w.newClassic()
	n.instance = m.instance
	replaceIn(m.w, m.w.classics, m, n, n.step)
}

func (m *kip848Classic) step() {
	r := m.w.r
	if !m.awake(m.drop, "its hold lapsed") {
		return
	}
	if !m.joined {
		m.join()
		return
	}
	crash := m.crashPercent()
	switch n := r.rng.Intn(100); {
	case n < crash:
		m.drop("it crashed")
		m.restart(m, m.replace)
	case n == crash:
		m.leave()
	case len(m.owned) > 0 && n < 35:
		m.commit()
	default:
		m.heartbeat()
	}
}

// retry handles an error common to every request: coordinator moved.
func (m *kip848Classic) retry(code int16) {
	if code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code {
		m.coord = 0
	}
	m.again(m.w.r.backoff())
}

// rejoin gives everything up and joins again (eager).
func (m *kip848Classic) rejoin(why string, forget bool) {
	m.drop(why)
	m.joined = false
	if forget {
		m.id = ""
	}
	m.again(m.w.r.backoff())
}

func (m *kip848Classic) leave() {
	r := m.w.r
	m.drop("it leaves")
	m.lease, m.claim = 0, 0
	if m.coord != 0 && m.id != "" {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = 5
		req.Group = kip848Group
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m.id}}
		r.kn.callAt(m.coord, req, r.o.RequestTimeout, nil, func(kmsg.Response, error, bool) {})
	}
	m.replace()
}

func (m *kip848Classic) join() {
	m.drop("it joins")
	m.withCoordinator(func() {
		r := m.w.r
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 9
		req.Group, req.MemberID, req.ProtocolType = kip848Group, m.id, "consumer"
		req.InstanceID = m.instance
		req.SessionTimeoutMillis = int32(kip848ClassicSession / time.Millisecond)
		req.RebalanceTimeoutMillis = int32(kip848Rebalance / time.Millisecond)
		md := kmsg.NewConsumerMemberMetadata()
		md.Version = 1
		md.Topics = []string{r.topic}
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}}
		m.ask(req, r.o.RequestTimeout+kip848Rebalance, func(resp kmsg.Response) {
			jr := resp.(*kmsg.JoinGroupResponse)
			switch jr.ErrorCode {
			case 0:
			case kerr.MemberIDRequired.Code:
				m.id = jr.MemberID
				m.again(0)
				return
			case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
				m.id = ""
				m.again(r.backoff())
				return
			default:
				m.retry(jr.ErrorCode)
				return
			}
			m.id, m.gen = jr.MemberID, jr.Generation
			m.sync(jr)
		})
	})
}

// sync sends the SyncGroup; the leader of a classic generation assigns the
// topic's partitions round robin over the members.
func (m *kip848Classic) sync(jr *kmsg.JoinGroupResponse) {
	r := m.w.r
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = kip848Group, m.id, m.gen
	pt := "consumer"
	req.ProtocolType, req.Protocol = &pt, jr.Protocol
	inCG := jr.LeaderID == "" // a consumer group answers no leader
	if jr.LeaderID == m.id && len(jr.Members) > 0 {
		r.cover(covKIP848ClassicLed)
		parts := make([][]int32, len(jr.Members))
		for p := int32(0); p < r.o.Partitions; p++ {
			i := int(p) % len(jr.Members)
			parts[i] = append(parts[i], p)
		}
		for i, jm := range jr.Members {
			a := kmsg.NewConsumerMemberAssignment()
			a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: r.topic, Partitions: parts[i]}}
			req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: jm.MemberID, MemberAssignment: a.AppendTo(nil)})
		}
	}
	sent := r.now()
	m.ask(req, r.o.RequestTimeout+kip848Rebalance, func(resp kmsg.Response) {
		sr := resp.(*kmsg.SyncGroupResponse)
		switch sr.ErrorCode {
		case 0:
		case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
			m.rejoin("sync: "+errName(sr.ErrorCode), true)
			return
		case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
			m.coord = 0
			m.rejoin("sync: "+errName(sr.ErrorCode), false)
			return
		default:
			m.rejoin("sync: "+errName(sr.ErrorCode), false)
			return
		}
		if sent+kip848ClassicHold <= r.now() {
			m.rejoin("the sync answer came after its hold", false)
			return
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(sr.MemberAssignment); err != nil && len(sr.MemberAssignment) > 0 {
			r.violation("checker", fmt.Sprintf("kip848 classic %s: unreadable assignment %x: %v", m.name, sr.MemberAssignment, err))
			return
		}
		if inCG {
			r.cover(covKIP848ClassicInCG)
		}
		m.joined = true
		m.hold(sent)
		for _, t := range a.Topics {
			if t.Topic != r.topic {
				continue
			}
			for _, p := range t.Partitions {
				if m.owned[p] {
					continue
				}
				if o := m.w.holderName(m, p); o != "" {
					r.violation("checker", fmt.Sprintf("kip848 ownership invalid: %s/%d given to classic %s (%s, generation %d) while %s still owns it",
						r.topic, p, m.name, m.id, m.gen, o))
				}
				m.owned[p] = true
				r.cover(covKIP848ClassicAssigned)
			}
		}
		m.fetch()
	})
}

// hold extends the member's hold from a request sent at sent that
// succeeded.
func (m *kip848Classic) hold(sent time.Duration) {
	m.lease = sent + kip848ClassicHold
	m.claim = sent + time.Duration(float64(kip848ClassicHold)/m.w.maxRate())
}

func (m *kip848Classic) heartbeat() {
	r := m.w.r
	m.withCoordinator(func() {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = 4
		req.Group, req.MemberID, req.Generation = kip848Group, m.id, m.gen
		sent := r.now()
		m.ask(req, r.o.RequestTimeout, func(resp kmsg.Response) {
			switch code := resp.(*kmsg.HeartbeatResponse).ErrorCode; code {
			case 0:
				if sent+kip848ClassicHold > r.now() {
					m.hold(sent)
				}
				m.again(m.beatInterval())
			case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
				m.rejoin("heartbeat: "+errName(code), false)
			case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
				r.cover(covKIP848Fenced)
				m.rejoin("heartbeat: "+errName(code), true)
			default:
				m.retry(code)
			}
		})
	})
}

// fetch reads the committed offsets of the partitions it owns (OffsetFetch
// v8: a classic client names no member).
func (m *kip848Classic) fetch() {
	parts := ownedParts(m.owned)
	if len(parts) == 0 {
		m.again(kip848Interval)
		return
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = kip848Group
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: m.w.r.topic, Partitions: parts}}
	req.Groups = append(req.Groups, g)
	m.fetchOffsets(req, "classic "+m.name)
}

// commit commits its positions with its generation (OffsetCommit v8).
func (m *kip848Classic) commit() {
	m.commitOffsets(8, m.id, m.gen, "classic "+m.name, func() string { return fmt.Sprintf("generation %d", m.gen) }, m.heartbeat)
}

// beatInterval is the pause after a successful Heartbeat: a static member
// (with static restarts, kip848.go) heartbeats every 500 ms, nearer a real
// client's 3 s, so it learns of a rebalance later and a partition moved
// away from it stays in its hands a while (what a downgrade must not
// hand to another member meanwhile).
func (m *kip848Classic) beatInterval() time.Duration {
	if m.instance != nil {
		return 500 * time.Millisecond
	}
	return kip848Interval
}
