package partition

// ActiveProducer is what DescribeProducers reports of one producer id with
// state on a partition (committed entries only, so every replica agrees).
type ActiveProducer struct {
	ID      int64
	Epoch   int16
	LastSeq int32 // the last sequence of its newest remembered batch; -1: none
	LastMs  int64 // the log's time of its last batch; -1: unknown
	// TxnStartOffset is the first offset of its open transaction here; -1
	// when none is open.
	TxnStartOffset int64
	// CoordEpoch is the coordinator epoch of its last marker here; -1:
	// none. An admin's abort (WriteTxnMarkers) must carry at least this
	// one, or the partition refuses it as from a deposed coordinator.
	CoordEpoch int32
}

// ActiveProducers returns the producers the partition remembers (those not
// expired by producer.id.expiration.ms), by producer id.
func (p *Partition) ActiveProducers() []ActiveProducer {
	var out []ActiveProducer
	for _, id := range p.applied.IDs() {
		st, _ := p.applied.Get(id)
		ap := ActiveProducer{ID: id, Epoch: st.Epoch, LastSeq: -1, LastMs: st.LastMs, TxnStartOffset: -1, CoordEpoch: -1}
		if st.CoordEpoch > 0 {
			ap.CoordEpoch = st.CoordEpoch
		}
		if n := len(st.Batches); n > 0 {
			ap.LastSeq = st.Batches[n-1].LastSeq
		}
		if ap.LastMs == noTime {
			ap.LastMs = -1
		}
		if o, ok := p.txns.Open(id); ok {
			ap.TxnStartOffset = o.FirstOffset
		}
		out = append(out, ap)
	}
	return out
}
