package partition

import (
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/replica"
)

// Transactions on a partition: which producers have a transaction open
// here (and the offset of its first batch), and which transactions were
// aborted (from their first batch to their abort marker). Like the producer
// table, this is a pure function of the log: every replica applies the same
// batches in order and reaches the same state, so the last stable offset
// and the aborted list a read_committed reader gets do not depend on which
// replica leads.
//
// A transaction opens on a partition with its producer's first
// transactional batch there and closes with the control batch (commit or
// abort marker) the transaction coordinator writes. A marker for a
// producer with nothing open changes nothing (markers are retried).

// AbortedTxn is an aborted transaction on a partition: its producer, the
// offset of its first batch and the offset of its abort marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// OpenTxn is a transaction open on a partition.
type OpenTxn struct {
	FirstOffset int64
	Epoch       int16
}

// Txns is a partition's transaction state.
//
// Invariants: aborted is ordered by LastOffset (log order of the markers);
// every open FirstOffset is below the offset of any batch applied after it.
type Txns struct {
	open    map[int64]OpenTxn
	aborted []AbortedTxn
}

// NewTxns returns the state of a log with no transactions.
func NewTxns() *Txns { return &Txns{open: map[int64]OpenTxn{}} }

// Apply applies one batch of the log, in order, on every replica. data is
// the whole batch (a control batch's marker is read from it).
func (t *Txns) Apply(h records.Header, data []byte) {
	if h.ProducerID < 0 || !h.IsTransactional() {
		return
	}
	if !h.IsControl() {
		if _, ok := t.open[h.ProducerID]; !ok {
			t.open[h.ProducerID] = OpenTxn{FirstOffset: h.BaseOffset, Epoch: h.ProducerEpoch}
		}
		return
	}
	m, err := batchMarker(data)
	if errors.Is(err, errNoMarker) {
		// A marker compaction removed (logstore/compact_txn.go): it goes
		// only after every batch of its transaction was emptied on the
		// replica that cleaned it, but this replica may hold those batches
		// still whole (it had them before the leader cleaned, and was sent
		// the cleaned marker). Taken as an abort, which hides them: an
		// aborted transaction's data must never show, and a committed
		// one's records were all superseded by later ones of their keys.
		m.Type, err = records.ControlAbort, nil
	}
	if err != nil {
		return
	}
	o, ok := t.open[h.ProducerID]
	if !ok {
		return
	}
	delete(t.open, h.ProducerID)
	if m.Type == records.ControlAbort {
		t.aborted = append(t.aborted, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: o.FirstOffset, LastOffset: h.BaseOffset})
	}
}

var errNoMarker = errors.New("partition: control batch without a transaction marker")

// batchMarker reads the transaction marker of a control batch.
func batchMarker(data []byte) (records.Marker, error) {
	var m records.Marker
	found := false
	err := records.Records(data, func(r records.Record) error {
		mk, err := records.ParseMarker(r)
		if err != nil {
			return err
		}
		m, found = mk, true
		return nil
	})
	if err == nil && !found {
		err = errNoMarker
	}
	return m, err
}

// markerCoordEpoch returns the coordinator epoch of a control batch's
// marker, 0 for any other batch or a marker that cannot be read (compaction
// removed it: a marker that old no longer fences anything).
func markerCoordEpoch(h records.Header, data []byte) int32 {
	if !h.IsControl() {
		return 0
	}
	m, err := batchMarker(data)
	if err != nil {
		return 0
	}
	return m.CoordinatorEpoch
}

// Open returns the transaction producer pid has open here, if any.
func (t *Txns) Open(pid int64) (OpenTxn, bool) {
	o, ok := t.open[pid]
	return o, ok
}

// OpenCount returns how many transactions are open here.
func (t *Txns) OpenCount() int { return len(t.open) }

// StableOffset is the last stable offset given the high watermark hw: the
// first offset of the oldest open transaction, or hw when none is open.
func (t *Txns) StableOffset(hw int64) int64 {
	lso := hw
	for _, o := range t.open { //floe:unordered a minimum does not depend on order
		lso = min(lso, o.FirstOffset)
	}
	return lso
}

// Aborted returns the aborted transactions that overlap offsets
// [from, to): what a read_committed fetch of that range must be told.
func (t *Txns) Aborted(from, to int64) []AbortedTxn {
	i := sort.Search(len(t.aborted), func(i int) bool { return t.aborted[i].LastOffset >= from })
	var out []AbortedTxn
	for ; i < len(t.aborted); i++ {
		if a := t.aborted[i]; a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// TrimBefore forgets aborted transactions whose marker is below start (the
// log no longer holds them, so no reader can need them).
func (t *Txns) TrimBefore(start int64) {
	i := sort.Search(len(t.aborted), func(i int) bool { return t.aborted[i].LastOffset >= start })
	if i > 0 {
		t.aborted = append([]AbortedTxn(nil), t.aborted[i:]...)
	}
}

// Clone returns a deep copy.
func (t *Txns) Clone() *Txns {
	c := &Txns{open: make(map[int64]OpenTxn, len(t.open)), aborted: append([]AbortedTxn(nil), t.aborted...)}
	for pid, o := range t.open { //floe:unordered copying a map
		c.open[pid] = o
	}
	return c
}

// openIDs returns the producers with an open transaction, sorted.
func (t *Txns) openIDs() []int64 {
	ids := make([]int64, 0, len(t.open))
	for id := range t.open { //floe:unordered sorted below
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// AppendMarker, on the leader, writes the control batch that ends producer
// pid's transaction here (commit or abort), as the transaction coordinator
// of epoch coordEpoch decided, at the producer epoch epoch (the
// coordinator's, which a fencing abort has bumped: the marker then fences
// the old producer here). A marker at an epoch older than the producer's is
// refused (INVALID_PRODUCER_EPOCH), and so is one from a coordinator older
// than the producer's last marker here (TRANSACTION_COORDINATOR_FENCED, as
// Kafka does): a deposed coordinator that still resends the previous
// transaction's markers (it was paused, or its messages were held) would
// otherwise end the producer's next transaction here with the old decision,
// at the same producer epoch (simulator seed 942289: an abort from
// coordinator epoch 3 closed a transaction that epoch 4 then committed, and
// its values were lost). A marker for a producer with nothing open is
// written anyway and changes nothing: the coordinator retries markers, and
// a retry must succeed once the first one is committed.
func (p *Partition) AppendMarker(pid int64, epoch int16, commit bool, coordEpoch int32, now time.Time) (AppendResult, error) {
	if err := p.pendingReady(); err != nil {
		return AppendResult{}, err
	}
	if st, ok := p.pending.Get(pid); ok {
		switch {
		case epoch < st.Epoch:
			return AppendResult{}, kerr.InvalidProducerEpoch
		case coordEpoch < st.CoordEpoch:
			return AppendResult{}, kerr.TransactionCoordinatorFenced
		}
	}
	typ := records.ControlAbort
	if commit {
		typ = records.ControlCommit
	}
	base := p.nextOffset
	batch := records.BuildMarker(records.Producer{ID: pid, Epoch: epoch}, records.Marker{Type: typ, CoordinatorEpoch: coordEpoch},
		base, int32(p.term), now.UnixMilli())
	h, err := records.ParseHeader(batch)
	if err != nil {
		return AppendResult{}, kerr.UnknownServerError
	}
	index, term, err := p.rep.Propose(replica.EntryBatch, batch)
	if err != nil {
		if errors.Is(err, consensus.ErrNotLeader) {
			return AppendResult{}, kerr.NotLeaderForPartition
		}
		return AppendResult{}, kerr.RequestTimedOut
	}
	applyBatch(p.pending, p.pendTxns, h, batch, index, term)
	p.nextOffset = h.NextOffset()
	return AppendResult{BaseOffset: base, Index: index, Term: term}, nil
}

// LastStableOffset is the offset below which every transaction is decided
// (committed entries only): what read_committed readers may read up to.
func (p *Partition) LastStableOffset() int64 {
	if plant.Enabled(plant.TxnLSOIgnoresOpen) {
		return p.hw
	}
	return p.txns.StableOffset(p.hw)
}

// AbortedTxns returns the aborted transactions overlapping [from, to).
func (p *Partition) AbortedTxns(from, to int64) []AbortedTxn { return p.txns.Aborted(from, to) }

// ReadCommitted prepares batches read from offset for a read_committed
// Fetch: it returns the aborted transactions the client must be told (those
// overlapping the batches) and how many bytes of data to serve.
//
// A client drops a listed producer's batches from the transaction's first
// offset until it meets that producer's abort marker, so a marker whose
// record compaction removed (an empty control batch) must not stay
// listed while the same answer holds later batches of the producer. If the
// transaction's batches in the answer are all empty too (compaction
// removed them first, as it always does on the replica that cleaned), the
// transaction is left out: nothing of it shows. If some still hold
// records (this replica was sent the cleaned marker after it had the
// data), the answer stops before the marker; the next read starts at the
// marker and then leaves the transaction out.
func (p *Partition) ReadCommitted(offset int64, data []byte) ([]AbortedTxn, int) {
	bs, err := records.Split(data)
	if err != nil || len(bs) == 0 {
		return p.txns.Aborted(offset, offset), len(data)
	}
	hs := make([]records.Header, len(bs))
	for i, b := range bs {
		if hs[i], err = records.ParseHeader(b); err != nil {
			return p.txns.Aborted(offset, offset), len(data)
		}
	}
	for n := len(hs); ; {
		var out []AbortedTxn
		cut := n
		for _, a := range p.txns.Aborted(offset, hs[n-1].NextOffset()) {
			i := sort.Search(n, func(i int) bool { return hs[i].BaseOffset >= a.LastOffset })
			if i == n || hs[i].BaseOffset != a.LastOffset || !hs[i].IsControl() || hs[i].RecordCount > 0 {
				out = append(out, a) // its marker is whole, or not in this answer
				continue
			}
			if liveBatchOf(hs[:i], a) {
				cut = min(cut, i)
				out = append(out, a)
			}
		}
		if cut == n {
			size := 0
			for _, h := range hs[:n] {
				size += h.Size()
			}
			return out, size
		}
		n = cut
	}
}

// liveBatchOf reports whether some batch of aborted transaction a in hs
// still holds records.
func liveBatchOf(hs []records.Header, a AbortedTxn) bool {
	for _, h := range hs {
		if h.ProducerID == a.ProducerID && h.IsTransactional() && !h.IsControl() &&
			h.BaseOffset >= a.FirstOffset && h.BaseOffset < a.LastOffset && h.RecordCount > 0 {
			return true
		}
	}
	return false
}

// CleanView is what the log cleaner needs of the partition's transactions
// to compact a log that holds some (logstore/compact_txn.go): the last
// stable offset, below which every transaction is decided, and the
// aborted-transaction index.
func (p *Partition) CleanView() *logstore.TxnView {
	return &logstore.TxnView{
		StableOffset: p.LastStableOffset(),
		Aborted: func(from, to int64) []logstore.AbortedRange {
			as := p.txns.Aborted(from, to)
			out := make([]logstore.AbortedRange, len(as))
			for i, a := range as {
				out[i] = logstore.AbortedRange{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: a.LastOffset}
			}
			return out
		},
	}
}

// OpenTxns returns how many transactions are open on the partition
// (committed entries only).
func (p *Partition) OpenTxns() int { return p.txns.OpenCount() }

// PendingOpenAt reports, on the leader, whether producer pid has a
// transaction open here at epoch, counting entries not yet committed (a
// transaction of an older epoch whose marker has not landed is not the
// batch's: KIP-890 part 2 bumps the epoch at every end).
func (p *Partition) PendingOpenAt(pid int64, epoch int16) bool {
	if p.pendTxns == nil {
		return false
	}
	o, ok := p.pendTxns.Open(pid)
	return ok && o.Epoch == epoch
}
