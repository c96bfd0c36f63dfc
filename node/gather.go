package node

// gather answers a request made of parts that may finish in later events.
// It holds one part of its own until the handler's final done, so parts
// that finish while the handler is still looping do not answer early.
type gather struct {
	pending int
	answer  func()
}

func newGather(answer func()) *gather { return &gather{pending: 1, answer: answer} }

func (g *gather) add() { g.pending++ }

// done finishes one part; the last one answers.
func (g *gather) done() {
	g.pending--
	if g.pending == 0 {
		g.answer()
	}
}
