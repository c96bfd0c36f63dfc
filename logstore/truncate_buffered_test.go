package logstore

// A truncation must not leave appended bytes behind in the write buffer.

import (
	"fmt"
	"testing"
)

// TruncateAfter exactly at a segment's base (the cut empties that segment)
// while the active segment's newest entries are still in the write buffer:
// entries appended after the cut must be the only ones the log holds, read
// back and after a reopen. Before the fix a cut at a segment base did not
// flush or drop the buffer (since 65912a5 the cut position there is found
// without reading a header, and reads are what flushed), so the cut
// entries' bytes were written at the start of the emptied segment, ahead
// of the new ones: reads at the cut index returned the old entry and the
// new entries sat at the wrong positions (sim seed 4201332 with --long --all-faults: a follower cut its
// log at the base of segment 14518 to take a new leader's entries, later
// read entry 14529 as damaged, and its repair's reopen found the old entry
// 14518 of term 74 where the committed one of term 75 belonged:
// committed-entry-changed).
func TestTruncateAtSegmentBaseWithBufferedEntries(t *testing.T) {
	for back := 0; back < 3; back++ {
		t.Run(fmt.Sprintf("segments-back-%d", back), func(t *testing.T) {
			fsys := newSim(int64(back))
			l, _ := openLog(t, fsys, smallSegments)
			es := appendBatches(t, l, 10, 2, 1, 0)
			must(t, l.Sync())
			// Roll back+1 times more, so the cut's segment has back
			// segments after it, and leave its entries buffered.
			for rolls := 0; rolls <= back; {
				n := len(l.segs)
				es = append(es, appendBatches(t, l, 1, 2, 1, 0)...)
				if len(l.segs) > n {
					rolls++
				}
			}
			es = append(es, appendBatches(t, l, 2, 2, 1, 0)...)
			if len(l.wbuf) == 0 {
				t.Fatal("nothing buffered: the case under test did not arise")
			}
			base := l.segs[len(l.segs)-1-back].base
			must(t, l.TruncateAfter(base-1))
			more := appendBatches(t, l, 4, 3, 2, 0)
			want := append(append([]Entry(nil), es[:base-1]...), more...)
			if err := sameEntries(allEntries(t, l), want); err != nil {
				t.Fatalf("cut after %d, before a reopen: %v", base-1, err)
			}
			must(t, l.Sync())
			must(t, l.Close())
			l, rec := openLog(t, fsys, smallSegments)
			if rec.Reason != "" {
				t.Fatalf("cut after %d: reopen cut the log: %+v", base-1, rec)
			}
			if err := sameEntries(allEntries(t, l), want); err != nil {
				t.Fatalf("cut after %d, after a reopen: %v", base-1, err)
			}
			must(t, l.Close())
		})
	}
}
