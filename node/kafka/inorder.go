package kafka

// InOrder puts the responses of one connection back in request order: the
// per-connection ordering of conn.go, without goroutines, locks or clocks,
// so the simulator's connections (sim/pipeconn.go) run the very same code.
//
// The contract:
//   - Reserve takes a slot for a request, in arrival order, and gives it a
//     ticket; at most Max slots are reserved at once (Reserve refuses the
//     next one).
//   - Fill marks a reserved slot answered; slots are filled in any order,
//     each at most once.
//   - ReadyHead returns the filled slots at the head, in arrival order, up
//     to the first unfilled one: only that prefix may be released (written
//     to the client), by Release.
//
// So a response leaves only after every earlier request's response. The
// caller serializes the calls (conn.go holds its mutex).
type InOrder[T any] struct {
	max   int
	first uint64 // the ticket of slots[0]
	slots []inOrderSlot[T]
}

type inOrderSlot[T any] struct {
	v      T
	filled bool
}

// NewInOrder returns an empty InOrder holding at most max slots (max >= 1).
func NewInOrder[T any](max int) *InOrder[T] {
	return &InOrder[T]{max: max, slots: make([]inOrderSlot[T], 0, max)}
}

// Max is the most slots reserved at once.
func (q *InOrder[T]) Max() int { return q.max }

// Len is how many slots are reserved and not yet released.
func (q *InOrder[T]) Len() int { return len(q.slots) }

// Full reports whether Reserve would refuse.
func (q *InOrder[T]) Full() bool { return len(q.slots) >= q.max }

// Reserve takes the next slot, holding v, and returns its ticket; ok is
// false (and nothing is reserved) when Max slots are reserved already.
func (q *InOrder[T]) Reserve(v T) (ticket uint64, ok bool) {
	if len(q.slots) >= q.max {
		return 0, false
	}
	q.slots = append(q.slots, inOrderSlot[T]{v: v})
	return q.first + uint64(len(q.slots)-1), true
}

// Fill marks ticket's slot answered. ok is false when the ticket is not
// reserved (released already, or never taken) or was filled before; head
// reports whether the slot is at the head, so the caller knows whether
// anything became releasable.
func (q *InOrder[T]) Fill(ticket uint64) (head, ok bool) {
	if ticket < q.first || ticket-q.first >= uint64(len(q.slots)) {
		return false, false
	}
	s := &q.slots[ticket-q.first]
	if s.filled {
		return false, false
	}
	s.filled = true
	return ticket == q.first, true
}

// Filled reports whether ticket's slot is reserved and filled.
func (q *InOrder[T]) Filled(ticket uint64) bool {
	if ticket < q.first || ticket-q.first >= uint64(len(q.slots)) {
		return false
	}
	return q.slots[ticket-q.first].filled
}

// ReadyHead appends to dst the values of the filled slots at the head, in
// arrival order, stopping at the first unfilled one, and returns it. It
// releases nothing.
func (q *InOrder[T]) ReadyHead(dst []T) []T {
	for _, s := range q.slots {
		if !s.filled {
			break
		}
		dst = append(dst, s.v)
	}
	return dst
}

// Release removes the first n slots, which ReadyHead returned. It panics
// when n is more than are reserved.
func (q *InOrder[T]) Release(n int) {
	if n == 0 {
		return
	}
	// Shift rather than reslice, so the backing array (Max slots) is
	// reused and never reallocated.
	left := copy(q.slots, q.slots[n:])
	clear(q.slots[left:])
	q.slots = q.slots[:left]
	q.first += uint64(n)
}

// TakeAll removes every slot, filled or not, and appends their values to
// dst in arrival order (a connection that closes with requests pending).
func (q *InOrder[T]) TakeAll(dst []T) []T {
	for _, s := range q.slots {
		dst = append(dst, s.v)
	}
	q.Release(len(q.slots))
	return dst
}
