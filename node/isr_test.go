package node

import (
	"testing"

	"github.com/floe-broker/floe/consensus"
)

// The ISR as Kafka means it: a new leadership starts with every voter in
// sync; a voter that does not reach the leader's mark within the lag
// window leaves, one that catches up comes back; a voter out of touch
// leaves at once and must catch up again to return; a voter keeping up
// never leaves.
func TestISRMarks(t *testing.T) {
	const lag = 600
	type voter struct {
		match  uint64
		active bool
	}
	vs := map[uint64]*voter{1: {100, true}, 2: {100, true}, 3: {10, true}}
	last := uint64(100)
	status := func() consensus.Status {
		st := consensus.Status{ID: 1, LastIndex: last}
		st.RaftState, st.Term = consensus.StateLeader, 2
		for _, id := range []uint64{1, 2, 3} {
			st.Progress = append(st.Progress, consensus.PeerProgress{ID: id, Match: vs[id].match, RecentActive: vs[id].active})
		}
		return st
	}
	var m isrMarks
	keep2 := true // voter 2 keeps up with the log
	isr := func(now uint64) []uint64 {
		var out []uint64
		for _, pr := range status().Progress {
			if m.inSync(pr, 1, 2, now, lag) {
				out = append(out, pr.ID)
			}
		}
		return out
	}
	// run samples every 75 ticks from..to, the log growing by 10 an
	// interval with voters 1 and 2 keeping up.
	run := func(from, to uint64) {
		for now := from; now <= to; now += 75 {
			last += 10
			vs[1].match = last
			if keep2 {
				vs[2].match = last - 5 // a round trip behind
			}
			m.sample(status(), now, lag)
		}
	}
	want := func(now uint64, ids ...uint64) {
		t.Helper()
		got := isr(now)
		if len(got) != len(ids) {
			t.Fatalf("tick %d: ISR %v, want %v", now, got, ids)
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Fatalf("tick %d: ISR %v, want %v", now, got, ids)
			}
		}
	}

	run(0, 0)
	want(0, 1, 2, 3) // a new leadership's grace
	run(75, 600)
	want(600, 1, 2, 3)
	run(675, 750)
	want(750, 1, 2) // 3 never reached a mark: out after the window
	vs[3].match = last
	run(825, 900)
	want(900, 1, 2, 3) // caught up: back

	vs[2].active, keep2 = false, false
	run(975, 975)
	want(975, 1, 3)
	vs[2].active = true // back in touch, but behind the mark
	run(1050, 1050)
	want(1050, 1, 3)
	keep2 = true // it catches up
	run(1125, 1125)
	want(1125, 1, 2, 3)

	// Another leadership (term 3): every voter in sync again until it
	// has a record; the record restarts the grace.
	st := status()
	st.Term = 3
	if !m.inSync(st.Progress[2], 1, 3, 1200, lag) {
		t.Fatal("a voter not in sync under a record of another term")
	}
	vs[3].match = 0
	m.sample(st, 1200, lag)
	if m.term != 3 || !m.inSync(st.Progress[2], 1, 3, 1200, lag) || m.inSync(st.Progress[2], 1, 3, 1200+lag+1, lag) {
		t.Fatalf("new leadership: %+v", m)
	}
}
