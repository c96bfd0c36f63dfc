package consensus

import (
	"errors"
	"math/rand"
	"testing"
)

// hostCluster runs groups on several Hosts, delivering frames at once and
// persisting to MemoryStorage.
type hostCluster struct {
	hosts    []*Host // hosts[i] is node i+1
	storages map[[2]uint64]*MemoryStorage
}

func newHostCluster(t testing.TB, nodes, groups int) *hostCluster {
	c := &hostCluster{storages: map[[2]uint64]*MemoryStorage{}}
	var voters []uint64
	for n := 1; n <= nodes; n++ {
		voters = append(voters, uint64(n))
	}
	for n := 1; n <= nodes; n++ {
		h := NewHost(uint64(n))
		rng := rand.New(rand.NewSource(int64(n)))
		for g := 1; g <= groups; g++ {
			ms := NewMemoryStorage()
			ms.SetConfState(ConfState{Voters: voters})
			rn, err := NewRawNode(Config{ID: uint64(n), ElectionTicks: 10, HeartbeatTicks: 2, Storage: ms,
				MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 64, CheckQuorum: true, PreVote: true, Rand: rng})
			if err != nil {
				t.Fatal(err)
			}
			h.Add(GroupID(g), rn)
			c.storages[[2]uint64{uint64(n), uint64(g)}] = ms
		}
		c.hosts = append(c.hosts, h)
	}
	return c
}

// round handles every group's Ready on every host, then flushes and
// delivers the frames. It returns the number of frames delivered.
func (c *hostCluster) round(t testing.TB) int {
	for _, h := range c.hosts {
		for _, g := range h.Groups() {
			rn := h.Get(g)
			if !rn.HasReady() {
				continue
			}
			rd := rn.Ready()
			ms := c.storages[[2]uint64{h.self, uint64(g)}]
			if rd.HardState != (HardState{}) {
				ms.SetHardState(rd.HardState)
			}
			if err := ms.Append(rd.Entries); err != nil {
				t.Fatal(err)
			}
			h.Enqueue(g, rd.Messages)
			h.Enqueue(g, rd.MessagesAfterPersist)
			rn.Advance(rd)
		}
	}
	frames := 0
	for _, h := range c.hosts {
		for _, out := range h.Flush() {
			frames++
			if err := c.hosts[out.To-1].Receive(h.self, out.Frame); err != nil {
				t.Fatal(err)
			}
		}
	}
	return frames
}

func (c *hostCluster) tick() {
	for _, h := range c.hosts {
		h.Tick()
	}
}

// settle runs rounds until no frame moves.
func (c *hostCluster) settle(t testing.TB) {
	for i := 0; i < 1000; i++ {
		if c.round(t) == 0 {
			return
		}
	}
	t.Fatal("cluster does not settle")
}

// elect ticks until every group has a leader.
func (c *hostCluster) elect(t testing.TB) {
	for i := 0; i < 200; i++ {
		c.tick()
		c.settle(t)
		if c.leaderless() == 0 {
			return
		}
	}
	t.Fatalf("%d groups without a leader", c.leaderless())
}

func (c *hostCluster) leaderless() int {
	n := 0
	for _, g := range c.hosts[0].Groups() {
		if c.hosts[0].Get(g).Status().Lead == 0 {
			n++
		}
	}
	return n
}

func TestHostElectsAndCoalesces(t *testing.T) {
	c := newHostCluster(t, 3, 50)
	c.elect(t)
	before := make([]HostStats, 3)
	for i, h := range c.hosts {
		before[i] = h.Stats()
	}
	// Two heartbeat intervals of idling.
	frames := 0
	for i := 0; i < 4; i++ {
		c.tick()
		frames += c.round(t)
		frames += c.round(t)
	}
	var msgs, coalesced uint64
	for i, h := range c.hosts {
		s := h.Stats()
		msgs += s.MessagesSent - before[i].MessagesSent
		coalesced += s.HeartbeatsCoalesced - before[i].HeartbeatsCoalesced
	}
	// 50 groups x 2 followers x (heartbeat + response) x 2 intervals.
	if msgs < 400 || coalesced != msgs {
		t.Fatalf("idle traffic: %d messages, %d coalesced; want >= 400, all coalesced", msgs, coalesced)
	}
	t.Logf("idle: %d messages, %d coalesced, %d frames", msgs, coalesced, frames)
	// At most one frame per ordered pair of nodes per round.
	if frames > 8*6 {
		t.Fatalf("%d frames for 8 rounds on 3 nodes", frames)
	}
	// Proposals still flow through the frames.
	for _, g := range c.hosts[0].Groups() {
		for _, h := range c.hosts {
			if rn := h.Get(g); rn.Status().RaftState == StateLeader {
				if _, _, err := rn.Propose(EntryNormal, []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	c.settle(t)
	for _, h := range c.hosts {
		for _, g := range h.Groups() {
			if st := h.Get(g).Status(); st.Commit != 2 {
				t.Fatalf("node %d group %d commit %d, want 2", h.self, g, st.Commit)
			}
		}
	}
}

func TestHostFrameRoundTrip(t *testing.T) {
	a, b := NewHost(1), NewHost(2)
	rnB, _ := newTestRawNode(t, 2, 1, 2, 3)
	b.Add(7, rnB)
	a.Enqueue(7, []Message{
		{Type: MsgHeartbeat, From: 1, To: 2, Term: 3, Commit: 0},
		{Type: MsgHeartbeat, From: 1, To: 2, Term: 3, Context: []byte("ctx")}, // not coalesced
		{Type: MsgApp, From: 1, To: 2, Term: 3, Index: 0, Entries: []Entry{{Term: 3, Index: 1, Data: []byte("x")}}},
		{Type: MsgHeartbeat, From: 1, To: 3, Term: 3},
		{Type: MsgHeartbeat, From: 9, To: 2, Term: 3}, // not ours: dropped
	})
	a.Enqueue(8, []Message{{Type: MsgHeartbeatResp, From: 1, To: 2, Term: 3}}) // unknown group at b
	out := a.Flush()
	if len(out) != 2 || out[0].To != 2 || out[1].To != 3 {
		t.Fatalf("frames %+v", out)
	}
	if err := b.Receive(1, out[0].Frame); err != nil {
		t.Fatal(err)
	}
	s := b.Stats()
	if s.MessagesReceived != 4 || s.UnknownGroup != 1 {
		t.Fatalf("stats %+v", s)
	}
	if st := rnB.Status(); st.Term != 3 || st.Lead != 1 || st.LastIndex != 1 {
		t.Fatalf("group 7 on b: %+v", st)
	}
	if len(a.Flush()) != 0 {
		t.Fatal("queues not emptied by Flush")
	}
}

func TestHostRejectsMalformedFrames(t *testing.T) {
	a, b := NewHost(1), NewHost(2)
	rnB, _ := newTestRawNode(t, 2, 1, 2, 3)
	b.Add(7, rnB)
	a.Enqueue(7, []Message{
		{Type: MsgHeartbeat, From: 1, To: 2, Term: 5},
		{Type: MsgApp, From: 1, To: 2, Term: 5, Entries: []Entry{{Term: 5, Index: 1}}},
	})
	frame := a.Flush()[0].Frame
	// A frame claiming to come from another peer than its messages say.
	if err := b.Receive(3, frame); err == nil {
		t.Fatal("frame whose messages are not from the sender accepted")
	}
	for i := 0; i < len(frame); i++ {
		if err := b.Receive(1, frame[:i]); !errors.Is(err, ErrCodec) {
			t.Fatalf("truncated frame (%d bytes): %v", i, err)
		}
	}
	if st := rnB.Status(); st.Term != 0 {
		t.Fatalf("a refused frame reached the group: term %d", st.Term)
	}
	rng := rand.New(rand.NewSource(5))
	for i := 0; i < 5000; i++ {
		junk := append([]byte(nil), frame...)
		junk[rng.Intn(len(junk))] ^= byte(1 << rng.Intn(8))
		_ = b.Receive(1, junk) // must not panic
	}
}

func TestHostGroups(t *testing.T) {
	h := NewHost(1)
	for _, g := range []GroupID{5, 1, 9, 3} {
		rn, _ := newTestRawNode(t, 1, 1)
		h.Add(g, rn)
	}
	h.Remove(9)
	h.Remove(42)
	got := h.Groups()
	if len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 5 || h.Get(9) != nil {
		t.Fatalf("groups %v", got)
	}
}

// BenchmarkHostHeartbeats1000Groups: 1,000 idle groups on 3 nodes through
// Host. One op is one heartbeat interval (HeartbeatTicks ticks on every
// node, with every Ready handled and every frame delivered). Reported per
// interval: Raft messages (heartbeats and responses) and network frames.
//
//	go test ./consensus -run XXX -bench HostHeartbeats
func BenchmarkHostHeartbeats1000Groups(b *testing.B) {
	c := newHostCluster(b, 3, 1000)
	c.elect(b)
	const heartbeatTicks = 2 // as in newHostCluster
	var msgs0, frames0, bytes0 uint64
	for _, h := range c.hosts {
		msgs0 += h.Stats().MessagesSent
		frames0 += h.Stats().FramesSent
		bytes0 += h.Stats().BytesSent
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for tick := 0; tick < heartbeatTicks; tick++ {
			c.tick()
			c.settle(b)
		}
	}
	b.StopTimer()
	var msgs, frames, bytes uint64
	for _, h := range c.hosts {
		msgs += h.Stats().MessagesSent
		frames += h.Stats().FramesSent
		bytes += h.Stats().BytesSent
	}
	b.ReportMetric(float64(msgs-msgs0)/float64(b.N), "raft-msgs/interval")
	b.ReportMetric(float64(frames-frames0)/float64(b.N), "frames/interval")
	b.ReportMetric(float64(bytes-bytes0)/float64(b.N), "bytes/interval")
	// What the same heartbeats would weigh as individual messages.
	hb := Message{Type: MsgHeartbeat, From: 1, To: 2, Term: 1, Commit: 1000}
	b.ReportMetric(float64(msgs-msgs0)/float64(b.N)*float64(len(hb.Marshal())+3), "uncoalesced-bytes/interval")
	if c.leaderless() != 0 {
		b.Fatalf("%d groups lost their leader while idling", c.leaderless())
	}
}
