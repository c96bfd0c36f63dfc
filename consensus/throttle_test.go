package consensus

import (
	"testing"
)

// TestSendBudgetLimitsCatchUp: a member whose budget is refilled by 30 KB
// at a time receives at most the refills plus one entry however much the
// leader has to send; unthrottled, it gets everything at once, which the
// same bound would refuse.
func TestSendBudgetLimitsCatchUp(t *testing.T) {
	const entry, entries, refill = 10_000, 50, 30_000
	for _, throttled := range []bool{true, false} {
		p := newPair(t)
		if throttled {
			p.rn[1].AddSendBudget(2, 0, refill)
		}
		for i := 0; i < entries; i++ {
			if _, _, err := p.rn[1].Propose(EntryNormal, make([]byte, entry)); err != nil {
				t.Fatal(err)
			}
		}
		got := p.pump(t)
		if !throttled {
			if got < entries*entry {
				t.Fatalf("unthrottled: member 2 got %d bytes of %d", got, entries*entry)
			}
			if got <= refill+entry {
				t.Fatalf("unthrottled got %d: the bound below could not fail", got)
			}
			continue
		}
		if got != 0 {
			t.Fatalf("no budget yet, yet member 2 got %d bytes", got)
		}
		var total uint64
		for k := 1; total < entries*entry; k++ {
			if k > 100 {
				t.Fatalf("member 2 got %d bytes of %d after 100 refills", total, entries*entry)
			}
			p.rn[1].AddSendBudget(2, refill, refill)
			total += p.pump(t)
			// At most the refills so far plus one entry's overdraft.
			if total > uint64(k*refill+entry) {
				t.Fatalf("after %d refills of %d, member 2 got %d bytes", k, refill, total)
			}
		}
		if b, ok := p.rn[1].SendBudget(2); !ok || b > refill {
			t.Fatalf("budget %d limited %v", b, ok)
		}
		p.rn[1].Unthrottle(2)
		if _, ok := p.rn[1].SendBudget(2); ok {
			t.Fatal("still limited after Unthrottle")
		}
	}
}
