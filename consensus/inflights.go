package consensus

// inflights is a leader's record of the MsgApps sent to one follower and not
// yet acknowledged, for flow control: a follower in replicate state gets no
// more appends once the count or the bytes reach their cap.
//
// It is a ring buffer of (last index, bytes) per message, in send order.
// Invariant: count <= sizeMax; bytes is the sum of the bytes of the count
// messages held; indexes increase from start onwards.
type inflights struct {
	start    int
	count    int
	bytes    uint64
	sizeMax  int
	bytesMax uint64 // 0: no byte cap
	buffer   []inflight
}

type inflight struct {
	index uint64
	bytes uint64
}

func newInflights(sizeMax int, bytesMax uint64) *inflights {
	return &inflights{sizeMax: sizeMax, bytesMax: bytesMax}
}

// add records a MsgApp whose last entry is index. The caller checks full()
// first; add past the cap is ignored rather than corrupting the ring.
func (in *inflights) add(index, bytes uint64) {
	if in.count >= in.sizeMax {
		return
	}
	if len(in.buffer) < in.sizeMax && in.count == len(in.buffer) {
		in.grow()
	}
	next := (in.start + in.count) % len(in.buffer)
	in.buffer[next] = inflight{index: index, bytes: bytes}
	in.count++
	in.bytes += bytes
}

// grow doubles the buffer (up to sizeMax), unrolling the ring.
func (in *inflights) grow() {
	size := min(max(2*len(in.buffer), 1), in.sizeMax)
	buf := make([]inflight, size)
	for i := 0; i < in.count; i++ {
		buf[i] = in.buffer[(in.start+i)%len(in.buffer)]
	}
	in.buffer = buf
	in.start = 0
}

// freeLE forgets every message whose last index is at or below to.
func (in *inflights) freeLE(to uint64) {
	for in.count > 0 {
		head := in.buffer[in.start]
		if head.index > to {
			break
		}
		in.bytes -= head.bytes
		in.start = (in.start + 1) % len(in.buffer)
		in.count--
	}
	if in.count == 0 {
		in.start = 0
	}
}

// freeFirstOne forgets the oldest message (a heartbeat response shows the
// follower is alive, so let one more append through).
func (in *inflights) freeFirstOne() {
	if in.count > 0 {
		in.freeLE(in.buffer[in.start].index)
	}
}

func (in *inflights) full() bool {
	return in.count >= in.sizeMax || (in.bytesMax > 0 && in.bytes >= in.bytesMax)
}

func (in *inflights) reset() {
	in.start, in.count, in.bytes = 0, 0, 0
}
