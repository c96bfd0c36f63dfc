package consensus

import (
	"math/rand"
	"slices"
	"testing"
)

// TestInflightsAgainstModel drives inflights and a plain slice with the
// same random operations and compares them.
func TestInflightsAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 200; round++ {
		sizeMax := 1 + rng.Intn(8)
		bytesMax := uint64(rng.Intn(3) * 100) // 0: no byte cap
		in := newInflights(sizeMax, bytesMax)
		var model []inflight
		next := uint64(1)
		for op := 0; op < 200; op++ {
			switch rng.Intn(3) {
			case 0, 1:
				if in.full() {
					continue
				}
				bytes := uint64(rng.Intn(60))
				in.add(next, bytes)
				model = append(model, inflight{next, bytes})
				next += 1 + uint64(rng.Intn(3))
			case 2:
				if len(model) == 0 {
					continue
				}
				to := model[rng.Intn(len(model))].index
				in.freeLE(to)
				model = slices.DeleteFunc(model, func(f inflight) bool { return f.index <= to })
			}
			var bytes uint64
			for _, f := range model {
				bytes += f.bytes
			}
			wantFull := len(model) >= sizeMax || (bytesMax > 0 && bytes >= bytesMax)
			if in.count != len(model) || in.bytes != bytes || in.full() != wantFull {
				t.Fatalf("round %d op %d: count %d bytes %d full %v; model %d %d %v",
					round, op, in.count, in.bytes, in.full(), len(model), bytes, wantFull)
			}
		}
	}
}

func TestInflightsFreeFirstOne(t *testing.T) {
	in := newInflights(2, 0)
	in.add(5, 10)
	in.add(9, 10)
	if !in.full() {
		t.Fatal("want full")
	}
	in.freeFirstOne()
	if in.full() || in.count != 1 || in.bytes != 10 {
		t.Fatalf("after freeFirstOne: %+v", in)
	}
	in.add(12, 1) // the ring wraps
	in.freeLE(12)
	if in.count != 0 || in.bytes != 0 {
		t.Fatalf("after freeLE: %+v", in)
	}
}

func TestProgressTransitions(t *testing.T) {
	pr := &progress{match: 4, next: 5, inflights: newInflights(4, 0)}
	pr.sentEntries(5, 1, 10)
	if !pr.isPaused() {
		t.Fatal("a probe must pause after one append")
	}
	if !pr.maybeDecrTo(4, 2) { // rejection of the probe at 4, hint 2
		t.Fatal("rejection of the outstanding probe ignored")
	}
	if pr.next != 5 || pr.isPaused() {
		t.Fatalf("next %d paused %v: next never goes below match+1", pr.next, pr.isPaused())
	}
	pr.becomeReplicate()
	pr.sentEntries(7, 2, 20)
	pr.sentEntries(9, 2, 20)
	if pr.next != 10 || pr.inflights.count != 2 {
		t.Fatalf("replicate: next %d inflight %d", pr.next, pr.inflights.count)
	}
	if pr.maybeDecrTo(3, 0) {
		t.Fatal("stale rejection (below match) accepted")
	}
	if !pr.maybeUpdate(7) || pr.match != 7 {
		t.Fatal("ack not recorded")
	}
	pr.becomeSnapshot(20)
	if !pr.isPaused() {
		t.Fatal("snapshot state must pause appends")
	}
	pr.becomeProbe()
	if pr.next != 21 {
		t.Fatalf("after snapshot, probe from snapshot+1: next %d", pr.next)
	}
}

// TestMajorityAgainstNaive compares majorityIndex and majorityVote with
// obviously correct definitions.
func TestMajorityAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 5000; i++ {
		n := rng.Intn(8)
		voters := make([]uint64, n)
		acks := map[uint64]uint64{}
		votes := map[uint64]bool{}
		for j := range voters {
			voters[j] = uint64(j + 1)
			acks[voters[j]] = uint64(rng.Intn(10))
			if rng.Intn(3) > 0 {
				votes[voters[j]] = rng.Intn(2) == 0
			}
		}
		got := majorityIndex(voters, func(id uint64) uint64 { return acks[id] })
		// Naive: the largest x such that more than half the voters acked >= x.
		var want uint64
		if n > 0 {
			for x := uint64(0); x < 10; x++ {
				c := 0
				for _, id := range voters {
					if acks[id] >= x {
						c++
					}
				}
				if 2*c > n {
					want = x
				}
			}
		}
		if got != want {
			t.Fatalf("majorityIndex(%v) = %d, want %d", acks, got, want)
		}
		granted, undecided := 0, 0
		for _, id := range voters {
			v, ok := votes[id]
			if !ok {
				undecided++
			} else if v {
				granted++
			}
		}
		wantRes := voteLost
		switch {
		case n > 0 && 2*granted > n:
			wantRes = voteWon
		case n > 0 && 2*(granted+undecided) > n:
			wantRes = votePending
		}
		if res := majorityVote(voters, votes); res != wantRes {
			t.Fatalf("majorityVote(%v) = %d, want %d", votes, res, wantRes)
		}
	}
}
