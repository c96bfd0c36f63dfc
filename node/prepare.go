package node

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/records"
)

// Prepared is the stateless, CPU-heavy part of a request, done by the
// runtime on the connection's goroutine before the request reaches the
// reactor, so the one reactor thread does not spend itself on CRCs and
// record walks. Today that is validating produced batches; what depends on
// topic configuration (the size limit, keys on compacted topics) is still
// checked on the reactor.
type Prepared struct {
	// batches[t][p] is the check of request topic t, partition p.
	batches [][]preparedBatch
	// The common request, one topic with one partition, fits here, so that
	// Prepare allocates once (issue 21: allocations per produce).
	oneTopic [1][]preparedBatch
	oneBatch [1]preparedBatch
}

type preparedBatch struct {
	summary records.Summary
	err     error
}

// Prepare does the stateless work of req (nil if there is none). It may run
// on any goroutine.
func Prepare(req kmsg.Request) *Prepared {
	pr, ok := req.(*kmsg.ProduceRequest)
	if !ok || pr.Version < 3 {
		return nil
	}
	p := &Prepared{}
	if len(pr.Topics) == 1 {
		p.batches = p.oneTopic[:]
	} else {
		p.batches = make([][]preparedBatch, len(pr.Topics))
	}
	n := 0
	for _, rt := range pr.Topics {
		n += len(rt.Partitions)
	}
	// Every topic's checks are carved from one slice.
	all := p.oneBatch[:]
	if n != 1 {
		all = make([]preparedBatch, n)
	}
	for ti, rt := range pr.Topics {
		p.batches[ti], all = all[:len(rt.Partitions):len(rt.Partitions)], all[len(rt.Partitions):]
		for pi, rp := range rt.Partitions {
			s, err := checkBatch(rp.Records, records.ValidateOptions{})
			p.batches[ti][pi] = preparedBatch{summary: s, err: err}
		}
	}
	return p
}

// batch returns the prepared check of topic ti, partition pi, if any.
func (p *Prepared) batch(ti, pi int) (preparedBatch, bool) {
	if p == nil || ti >= len(p.batches) || pi >= len(p.batches[ti]) {
		return preparedBatch{}, false
	}
	return p.batches[ti][pi], true
}
