package node

// Reading a partition the share coordinator holds no replica of.
//
// A share group's coordinator (shares.go) reads the committed records it
// hands out (ShareFetch) and the records it copies to a dead-letter topic
// (share_dlq.go) from its own replica of the partition when it holds one.
// When it holds none (a cluster with more brokers than the replication
// factor, or a replica moved away by a reassignment or the balancer) it
// reads them from the partition's leader over the peer network
// (rpcShareRead): the leader answers with its log's start offset, high
// watermark and last stable offset and the batches from the asked offset
// up to its high watermark, exactly what a local replica's Read would
// give (partition.Read stops at the high watermark, and every replica
// holds the same committed records). The coordinator then acquires from
// that answer as from a replica of its own (shareView): only records below
// the answer's high watermark (and last stable offset for a read_committed
// group), all in one synchronous step on its in-memory state, so an
// acquisition is never made twice nor on records the answer does not hold.
//
// The read is asynchronous (the reactor's callbacks, no goroutines): a
// ShareFetch with such partitions asks all of them first and acquires
// once every answer came or shareReadTimeout passed; a partition whose
// answer did not come (its leader moved, died, or the frame was lost) is
// answered with no records, as a fetch that found none, and the client
// fetches again. Answers are matched by this incarnation's nonce and a
// sequence; a duplicate or late answer finds no waiter.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
)

const (
	rpcShareRead    = 26 // a share coordinator reads committed records of a partition it holds no replica of
	rpcShareReadAck = 27 // the partition's replica: what it read, or the error

	// shareReadTimeout bounds a remote read.
	shareReadTimeout = time.Second
	// shareReadMaxBytes bounds the records one remote read returns (at
	// least one batch, as a local read).
	shareReadMaxBytes = 4 << 20
)

// shareReads are this broker's remote reads awaiting an answer: each
// one's done, to call with the answer, or nil when none came
// (rpc_calls.go).
type shareReads = rpcCalls[func(v *shareView)]

// shareView is what the coordinator reads a partition's committed
// records from: its own replica (local), or a remote replica's answer.
type shareView struct {
	local *partition.Partition
	// A remote answer: the replica's log start, high watermark, last
	// stable offset and whether it led; data read from base, below hw.
	code           int16
	start, hw, lso int64
	leader         bool
	base           int64
	data           []byte
}

func localShareView(p *partition.Partition) *shareView { return &shareView{local: p} }

func (v *shareView) startOffset() int64 {
	if v.local != nil {
		return v.local.StartOffset()
	}
	return v.start
}

func (v *shareView) highWatermark() int64 {
	if v.local != nil {
		return v.local.HighWatermark()
	}
	return v.hw
}

func (v *shareView) lastStableOffset() int64 {
	if v.local != nil {
		return v.local.LastStableOffset()
	}
	return v.lso
}

// isLeader: only the leader's start offset is the log's (a follower's
// local log may start later, after a snapshot install).
func (v *shareView) isLeader() bool {
	if v.local != nil {
		return v.local.IsLeader()
	}
	return v.leader
}

// read returns the batches from the one holding from, at most maxBytes
// (at least one batch), as partition.Read does. A remote view holds only
// what was read from base: an offset below it is not available.
func (v *shareView) read(from int64, maxBytes int) ([]byte, error) {
	if v.local != nil {
		return v.local.Read(from, maxBytes)
	}
	if v.code != 0 {
		return nil, kerr.ErrorForCode(v.code)
	}
	if from < v.base {
		return nil, kerr.OffsetNotAvailable
	}
	batches, err := records.Split(v.data)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, b := range batches {
		h, err := records.ParseHeader(b)
		if err != nil {
			break
		}
		if h.LastOffset() < from {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > maxBytes {
			break
		}
		out = append(out, b...)
	}
	return out, nil
}

// shareRead reads partition part of topic from offset from (at most
// maxBytes) on its leader, and calls done once with the answer, or nil
// when none came within shareReadTimeout (or there is no leader to ask).
func (r *Reactor) shareRead(topic string, part int32, from int64, maxBytes int, done func(v *shareView)) {
	cp := r.partitionNamed(topic, part)
	if cp == nil {
		done(nil)
		return
	}
	lead, _ := r.partitionLeader(cp)
	if lead <= 0 || uint64(lead) == r.self {
		done(nil)
		return
	}
	nonce, id := r.shares.reads.register(r, done, shareReadTimeout, func(done func(*shareView)) { done(nil) })
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcShareRead)
	w.Uvarint(nonce)
	w.Uvarint(id)
	w.String(topic)
	w.Varint(int64(part))
	w.Varint(from)
	w.Uvarint(uint64(min(max(maxBytes, 1), shareReadMaxBytes)))
	r.env.Net.Send(netx.NodeID(lead), w.B)
}

// handleShareReadRPC handles the remote read RPCs (the reader is past the
// kind).
func (r *Reactor) handleShareReadRPC(from uint64, kind uint8, rd *wire.Reader) {
	switch kind {
	case rpcShareRead:
		nonce, id := rd.Uvarint(), rd.Uvarint()
		topic, part, off, maxBytes := rd.String(), int32(rd.Varint()), rd.Varint(), rd.Uvarint()
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		var w wire.Writer
		w.U8(frameRPC)
		w.U8(rpcShareReadAck)
		w.Uvarint(nonce)
		w.Uvarint(id)
		p, ok := r.byName[topicPartition{topic, part}]
		if !ok {
			w.Varint(int64(kerr.NotLeaderForPartition.Code))
			r.env.Net.Send(netx.NodeID(from), w.B)
			return
		}
		start := p.StartOffset()
		base := max(off, start)
		data, err := p.Read(base, int(min(maxBytes, shareReadMaxBytes)))
		if err != nil {
			w.Varint(int64(errCode(err)))
			r.env.Net.Send(netx.NodeID(from), w.B)
			return
		}
		w.Varint(0)
		w.Varint(start)
		w.Varint(p.HighWatermark())
		w.Varint(p.LastStableOffset())
		w.Bool(p.IsLeader())
		w.Varint(base)
		w.Bytes(data)
		r.env.Net.Send(netx.NodeID(from), w.B)
	case rpcShareReadAck:
		nonce, id := rd.Uvarint(), rd.Uvarint()
		v := &shareView{code: int16(rd.Varint())}
		if v.code == 0 {
			v.start, v.hw, v.lso, v.leader, v.base = rd.Varint(), rd.Varint(), rd.Varint(), rd.Bool(), rd.Varint()
			v.data = append([]byte(nil), rd.Bytes()...)
		}
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		if done, ok := r.shares.reads.take(r, nonce, id); ok {
			if v.code == 0 {
				r.stats.ShareRemoteReads++
			}
			done(v)
		} // else an answer to an earlier incarnation, a duplicate or a late one
	}
}
