package group

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

// checkInvariants checks what group.go writes on the data.
func checkInvariants(t *rapid.T, c *Coordinator) {
	for _, name := range c.groupNames() {
		g := c.groups[name]
		if g.state == Dead {
			t.Fatalf("%s: Dead group kept", name)
		}
		awaiting := 0
		for _, m := range g.members {
			if g.byID[m.id] != m || m.gone {
				t.Fatalf("%s: member %s not indexed or marked gone", name, m.id)
			}
			if m.joinWaiter != nil {
				awaiting++
			}
			if m.instanceID != nil && g.static[*m.instanceID] != m.id {
				t.Fatalf("%s: static member %s not in the static map", name, m.id)
			}
		}
		if len(g.byID) != len(g.members) {
			t.Fatalf("%s: byID has %d, members %d", name, len(g.byID), len(g.members))
		}
		if awaiting != g.awaitingJoin {
			t.Fatalf("%s: awaitingJoin %d, counted %d", name, g.awaitingJoin, awaiting)
		}
		if (g.leader == "") != (len(g.members) == 0) || (g.leader != "" && g.byID[g.leader] == nil) {
			t.Fatalf("%s: leader %q with %d members", name, g.leader, len(g.members))
		}
		for inst, id := range g.static {
			if m := g.byID[id]; m == nil || m.instanceID == nil || *m.instanceID != inst {
				t.Fatalf("%s: static %s → %s is not that member", name, inst, id)
			}
		}
		for id := range g.pendingSync {
			if g.byID[id] == nil {
				t.Fatalf("%s: pending sync for non-member %s", name, id)
			}
		}
		switch g.state {
		case Empty:
			if len(g.members) > 0 || g.protocol != nil {
				t.Fatalf("%s: Empty with %d members, protocol %v", name, len(g.members), g.protocol)
			}
		case CompletingRebalance, Stable:
			if len(g.members) == 0 || g.protocol == nil {
				t.Fatalf("%s: %s with %d members, protocol %v", name, g.state, len(g.members), g.protocol)
			}
		}
		for tp, n := range g.pendingCommits {
			if n <= 0 {
				t.Fatalf("%s: pending commit count %d for %v", name, n, tp)
			}
		}
	}
}

// TestRandomClientsEveryRequestAnsweredOnce drives a coordinator with
// random client behaviour (joins, rejoins, restarts of static members,
// syncs, heartbeats, leaves, commits, log stalls and failures, time
// passing, failovers) and checks after every step the data invariants,
// that no request is answered twice, that every successful SyncGroup of a
// generation carries the assignment of that generation's one written
// leader assignment, and at the end (after Close) that every request was
// answered exactly once.
func TestRandomClientsEveryRequestAnsweredOnce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t, testConfig)
		type slot struct {
			id       string
			instance string
			gen      int32
		}
		slots := make([]*slot, 5)
		for i := range slots {
			slots[i] = &slot{}
			if i >= 3 {
				slots[i].instance = fmt.Sprintf("inst%d", i)
			}
		}
		var joins []*reply[kmsg.JoinGroupResponse]
		type syncCall struct {
			r   *reply[kmsg.SyncGroupResponse]
			gen int32
		}
		var syncs []syncCall
		var commits []*reply[kmsg.OffsetCommitResponse]
		nonce := 0
		syncNonce := map[int32]string{} // generation → nonce of its written assignment
		checkSync := func(gen int32, r *kmsg.SyncGroupResponse) {
			if r == nil || r.ErrorCode != 0 || len(r.MemberAssignment) == 0 {
				return
			}
			parts := strings.Split(string(r.MemberAssignment), "/")
			if parts[0] != fmt.Sprint(gen) {
				rt.Fatalf("sync of generation %d got assignment %q of another generation", gen, r.MemberAssignment)
			}
			if n, ok := syncNonce[gen]; ok && n != parts[2] {
				rt.Fatalf("generation %d handed out two assignments (%s and %s)", gen, n, parts[2])
			}
			syncNonce[gen] = parts[2]
		}
		steps := rapid.IntRange(1, 80).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			s := slots[rapid.IntRange(0, len(slots)-1).Draw(rt, "slot")]
			switch op := rapid.IntRange(0, 11).Draw(rt, "op"); op {
			case 0, 1: // join (new, or rejoin with the member id)
				member := s.id
				if rapid.Bool().Draw(rt, "fresh") {
					member = ""
				}
				j := h.join(joinSpec{group: "g", member: member, instance: s.instance, protocols: []string{"range"}})
				joins = append(joins, j)
				if r := j.resp; r != nil && r.MemberID != "" {
					s.id, s.gen = r.MemberID, r.Generation
				}
			case 2, 3: // sync (as leader with an assignment, maybe)
				var assign map[string]string
				if rapid.Bool().Draw(rt, "lead") {
					nonce++
					assign = map[string]string{}
					for _, o := range slots {
						if o.id != "" {
							assign[o.id] = fmt.Sprintf("%d/%s/%d", s.gen, o.id, nonce)
						}
					}
				}
				syncs = append(syncs, syncCall{h.sync("g", s.id, s.gen, assign), s.gen})
			case 4, 5:
				h.heartbeat("g", s.id, s.gen)
			case 6:
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Version = 5
				req.Group = "g"
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID = s.id
				req.Members = []kmsg.LeaveGroupRequestMember{m}
				h.c.LeaveGroup(h.now, req)
			case 7:
				commits = append(commits, h.commit("g", s.id, s.gen, "t", int32(rapid.IntRange(0, 2).Draw(rt, "p")), int64(step)))
			case 8:
				h.advance(time.Duration(rapid.IntRange(0, 15000).Draw(rt, "ms")) * time.Millisecond)
			case 9:
				h.log.Hold = rapid.Bool().Draw(rt, "hold")
			case 10:
				if rapid.IntRange(0, 4).Draw(rt, "fail") == 0 {
					h.log.FailAll(kerr.RequestTimedOut)
				} else {
					h.log.CommitAll()
				}
			case 11:
				if rapid.IntRange(0, 5).Draw(rt, "failover") == 0 {
					h.log.CommitAll()
					h.failover()
				}
			}
			// Answered joins tell their member its id and generation.
			for _, j := range joins {
				if r := j.resp; r != nil && r.ErrorCode == 0 {
					for _, o := range slots {
						if o.id == r.MemberID {
							o.gen = r.Generation
						}
					}
				}
			}
			for _, sy := range syncs {
				checkSync(sy.gen, sy.r.resp)
			}
			checkInvariants(rt, h.c)
		}
		h.c.Close()
		h.log.CommitAll()
		for i, j := range joins {
			if j.n != 1 {
				rt.Fatalf("join %d answered %d times", i, j.n)
			}
		}
		for i, s := range syncs {
			if s.r.n != 1 {
				rt.Fatalf("sync %d answered %d times", i, s.r.n)
			}
		}
		for i, c := range commits {
			if c.n != 1 {
				rt.Fatalf("commit %d answered %d times", i, c.n)
			}
		}
	})
}
