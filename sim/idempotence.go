package sim

import (
	"fmt"
	"math/rand"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/jepsen/history"
)

// idemWindow is how many recent batches per producer and partition a
// broker must recognise as duplicates (Kafka's 5 in-flight requests per
// connection).
const idemWindow = 5

// retrier is an idempotent producer that exercises the duplicate window
// the way a real client with 5 requests in flight does: when the response
// to a batch is lost while the later ones are acknowledged, the client
// resends it with its old sequence. So now and then it resends one of its
// last idemWindow acknowledged batches of a partition, and the broker must
// answer exactly as the first time: no error and the same base offset. An
// OUT_OF_ORDER_SEQUENCE_NUMBER (the window forgot the batch) or another
// base offset (written twice) breaks Kafka's idempotence contract and
// fails the run. The resends are not operations of the history (the values
// were acknowledged already); a second copy in the log also shows in the
// duplicate checker.
type retrier struct {
	r     *run
	rng   *rand.Rand
	proc  int64
	pid   int64
	epoch int16
	seq   map[int32]int32
	// acked: per partition, the last idemWindow acknowledged batches,
	// oldest first.
	acked  map[int32][]ackedBatch
	checks int

	// Epoch bumps (KIP-360): now and then the retrier asks for the next
	// epoch of its producer id (InitProducerId with its id and epoch), as
	// a client does after an unknown outcome, and from then on writes at
	// the new epoch. zombie is the epoch it left; a batch stamped with it
	// (a zombie of the old producer, with the very sequence the new epoch
	// expects next) must be refused INVALID_PRODUCER_EPOCH once a batch of
	// the new epoch is acknowledged on that partition.
	erng    *rand.Rand
	zombie  int16 // the epoch left behind, -1 for none
	fenced  int
	bumping bool
}

type ackedBatch struct {
	values []string
	stamp  producerStamp
	base   int64
}

func newRetrier(r *run, seed int64) *retrier {
	return &retrier{r: r, rng: rand.New(rand.NewSource(seed)), pid: -1,
		erng: rand.New(rand.NewSource(seed ^ 0xe70c)), zombie: -1}
}

func (p *retrier) start() {
	p.proc = p.r.newProc()
	p.r.active++
	p.next()
}

func (p *retrier) next() {
	if p.r.stopping {
		p.r.active--
		return
	}
	p.r.w.After(p.r.think(), p.op)
}

func (p *retrier) reset() {
	p.proc, p.pid = p.r.newProc(), -1
	p.acked, p.zombie = nil, -1
}

func (p *retrier) op() {
	r := p.r
	if r.stopping {
		r.active--
		return
	}
	if p.pid < 0 {
		p.initPID()
		return
	}
	part := int32(p.rng.Intn(int(r.o.Partitions)))
	if p.zombie >= 0 && p.seq[part] > 0 && p.erng.Intn(8) == 0 {
		p.sendZombie(part)
		return
	}
	if p.erng.Intn(12) == 0 && p.epoch < 100 {
		p.bumpEpoch()
		return
	}
	if w := p.acked[part]; len(w) >= 2 && p.rng.Intn(3) == 0 {
		p.resend(part, w[p.rng.Intn(len(w)-1)]) // not the newest: that one any window keeps
		return
	}
	stamp := producerStamp{pid: p.pid, epoch: p.epoch, seq: p.seq[part]}
	n := 1 + p.rng.Intn(r.o.RecordsMax)
	var op *produceOp
	op = r.produceOpAcked(p.proc, part, n, stamp, func(typ history.Type) {
		if typ == history.OK {
			p.seq[part] += int32(n)
		} else {
			p.reset()
		}
		p.next()
	}, func(base int64) {
		w := append(p.acked[part], ackedBatch{values: op.values, stamp: stamp, base: base})
		if len(w) > idemWindow {
			w = w[1:]
		}
		p.acked[part] = w
	})
}

func (p *retrier) initPID() {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.ProducerID, req.ProducerEpoch = -1, -1
	req.TransactionTimeoutMillis = 60000
	p.r.kn.call(p.r.meta.anyNode(), req, p.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			ir := resp.(*kmsg.InitProducerIDResponse)
			if ir.ErrorCode == 0 && ir.ProducerID >= 0 {
				p.pid, p.epoch, p.seq, p.acked = ir.ProducerID, ir.ProducerEpoch, map[int32]int32{}, map[int32][]ackedBatch{}
			}
		}
		p.next()
	})
}

// bumpEpoch asks for the producer id's next epoch (InitProducerId v4 with
// the current id and epoch). On success every sequence starts over at 0
// and the acknowledged batches are forgotten: resent with the old epoch
// they would be fenced, rightly.
func (p *retrier) bumpEpoch() {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.ProducerID, req.ProducerEpoch = p.pid, p.epoch
	req.TransactionTimeoutMillis = 60000
	pid, old := p.pid, p.epoch
	p.r.kn.call(p.r.meta.anyNode(), req, p.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil && p.pid == pid && p.epoch == old {
			ir := resp.(*kmsg.InitProducerIDResponse)
			if ir.ErrorCode == 0 && ir.ProducerID == pid && ir.ProducerEpoch <= old {
				p.r.inv.fail("epoch-bump", "InitProducerId for producer %d at epoch %d answered epoch %d: a bump must give a later epoch", pid, old, ir.ProducerEpoch)
			}
			if ir.ErrorCode == 0 && ir.ProducerID == pid && ir.ProducerEpoch > old {
				p.zombie, p.epoch = old, ir.ProducerEpoch
				p.seq, p.acked = map[int32]int32{}, map[int32][]ackedBatch{}
				p.r.cover("producer epoch bumped")
			}
		}
		p.next()
	})
}

// sendZombie writes a fresh batch stamped with the epoch the producer
// left, carrying the sequence its new epoch expects next on part (where
// the new epoch has an acknowledged batch): only the epoch check can
// refuse it. Acknowledged, the old producer wrote after its fence.
func (p *retrier) sendZombie(part int32) {
	r := p.r
	leader, ok := r.meta.leader(part)
	if !ok {
		r.meta.refresh(p.next)
		return
	}
	stamp := producerStamp{pid: p.pid, epoch: p.zombie, seq: p.seq[part]}
	r.values++
	value := fmt.Sprintf("zombie-%d", r.values)
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = r.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	rp.Records = encodeBatch([]string{value}, r.w.Clock().Now().UnixMilli(), stamp)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		defer p.next()
		if err != nil {
			return
		}
		code, base := produceResult(resp, r.topic, part)
		switch {
		case code == kerr.InvalidProducerEpoch.Code:
			p.fenced++
			r.cover("zombie producer epoch fenced")
		case code == 0:
			r.inv.fail("epoch-fence", "producer %d partition %d: a batch at epoch %d (seq %d) was acknowledged at offset %d after epoch %d had written there",
				stamp.pid, part, stamp.epoch, stamp.seq, base, p.epoch)
		case retriable(code):
			r.meta.invalidate(part)
		}
	})
}

// resend sends an acknowledged batch again and checks the answer. A lost
// request or a retriable error says nothing; the next resend tries again.
func (p *retrier) resend(part int32, b ackedBatch) {
	r := p.r
	leader, ok := r.meta.leader(part)
	if !ok {
		r.meta.refresh(p.next)
		return
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = r.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	rp.Records = encodeBatch(b.values, r.w.Clock().Now().UnixMilli(), b.stamp)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		defer p.next()
		if err != nil {
			return
		}
		code, base := produceResult(resp, r.topic, part)
		switch {
		case code == 0 && base == b.base:
			p.checks++
			r.cover("idempotent resend answered as duplicate")
		case code == 0:
			r.inv.fail("idempotence", "producer %d partition %d: resent batch (seq %d, values %v) acknowledged at %d, first at %d: written twice",
				b.stamp.pid, part, b.stamp.seq, b.values, base, b.base)
		case retriable(code):
			r.meta.invalidate(part)
		default:
			r.inv.fail("idempotence", "producer %d partition %d: resent batch (seq %d, within the last %d acknowledged) answered %s, not as a duplicate at %d",
				b.stamp.pid, part, b.stamp.seq, idemWindow, errName(code), b.base)
		}
	})
}

func (p *retrier) String() string {
	return fmt.Sprintf("retrier pid %d: %d resends checked, %d zombie batches fenced", p.pid, p.checks, p.fenced)
}
