package consensus

import (
	"encoding/binary"
	"slices"
	"sort"
)

// GroupID names a Raft group on a node (a partition replica, or the
// controller).
type GroupID uint64

// Outbound is one frame for one peer.
type Outbound struct {
	To    uint64
	Frame []byte
}

// HostStats counts a Host's traffic.
type HostStats struct {
	FramesSent          uint64 // frames produced by Flush
	BytesSent           uint64 // their total size
	MessagesSent        uint64 // Raft messages in them, coalesced ones included
	HeartbeatsCoalesced uint64 // heartbeats and responses sent as list items
	FramesReceived      uint64
	MessagesReceived    uint64 // Raft messages decoded, coalesced ones included
	UnknownGroup        uint64 // messages for a group not on this host
	StepErrors          uint64 // messages a RawNode refused
}

// Host runs many groups on one node. The node's id is every group's Raft
// member id on this node. Messages for one peer, from every group, leave
// in a single frame per Flush; heartbeats and heartbeat responses without a
// ReadIndex context shrink to (group, term, commit) list items, so that a
// thousand groups idling between two nodes cost a couple of frames per
// heartbeat interval instead of thousands of messages (like CockroachDB's
// coalesced heartbeats).
//
// A Host is not safe for concurrent use; the node's reactor owns it.
type Host struct {
	self   uint64
	groups map[GroupID]*RawNode
	// order holds the group ids, sorted. Invariant: same set as groups.
	order  []GroupID
	queues map[uint64]*peerQueue
	stats  HostStats
	// sizes is encodeFrame's scratch: each queued message's encoded size.
	sizes []int
	// changed, if set, is told each group that may have new work: every
	// group Receive steps a message into, and every Changed call
	// (SetChanged).
	changed func(GroupID)
}

// peerQueue is what waits for the next Flush to one peer.
type peerQueue struct {
	beats     []coalescedBeat
	beatResps []coalescedBeat
	msgs      []groupMessage
}

type coalescedBeat struct {
	group  GroupID
	term   uint64
	commit uint64 // heartbeats only
}

type groupMessage struct {
	group GroupID
	msg   Message
}

// NewHost returns a Host for node self.
func NewHost(self uint64) *Host {
	return &Host{self: self, groups: map[GroupID]*RawNode{}, queues: map[uint64]*peerQueue{}}
}

// Add registers (or replaces) group g's RawNode; a nil one is ignored.
func (h *Host) Add(g GroupID, rn *RawNode) {
	if rn == nil {
		return
	}
	if _, ok := h.groups[g]; !ok {
		i, _ := slices.BinarySearch(h.order, g)
		h.order = slices.Insert(h.order, i, g)
	}
	h.groups[g] = rn
}

// Remove forgets group g.
func (h *Host) Remove(g GroupID) {
	if _, ok := h.groups[g]; !ok {
		return
	}
	delete(h.groups, g)
	i, _ := slices.BinarySearch(h.order, g)
	h.order = slices.Delete(h.order, i, i+1)
}

// SetChanged makes the host call f with each group that may have new
// work: those Receive steps a message into (before the step), and those
// named to Changed. The owner can then find the groups with a Ready
// without asking every group (node/workset.go). Tick calls nothing: it
// changes every group.
func (h *Host) SetChanged(f func(GroupID)) { h.changed = f }

// Changed reports that group g's RawNode was driven from outside the host
// (a proposal, a campaign, a Ready taken or advanced).
func (h *Host) Changed(g GroupID) {
	if h.changed != nil {
		h.changed(g)
	}
}

// Get returns group g's RawNode, or nil.
func (h *Host) Get(g GroupID) *RawNode { return h.groups[g] }

// Groups returns the group ids, sorted.
func (h *Host) Groups() []GroupID { return slices.Clone(h.order) }

// Stats returns the traffic counters.
func (h *Host) Stats() HostStats { return h.stats }

// Tick ticks every group, in group order.
func (h *Host) Tick() {
	for _, g := range h.order {
		h.groups[g].Tick()
	}
}

// Enqueue queues group g's outbound messages until the next Flush.
// Messages not from this node are dropped.
func (h *Host) Enqueue(g GroupID, msgs []Message) {
	for i := range msgs {
		m := &msgs[i]
		if m.From != h.self || m.To == h.self || m.To == 0 {
			continue
		}
		q := h.queues[m.To]
		if q == nil {
			q = &peerQueue{}
			h.queues[m.To] = q
		}
		switch {
		case m.Type == MsgHeartbeat && len(m.Context) == 0 && m.Index == 0:
			// (One that carries the leader's log end, fence.go, goes whole.)
			q.beats = append(q.beats, coalescedBeat{group: g, term: m.Term, commit: m.Commit})
		case m.Type == MsgHeartbeatResp && len(m.Context) == 0:
			q.beatResps = append(q.beatResps, coalescedBeat{group: g, term: m.Term})
		default:
			q.msgs = append(q.msgs, groupMessage{group: g, msg: *m})
		}
	}
}

// Flush returns one frame per peer with everything queued for it, sorted by
// peer, and empties the queues.
func (h *Host) Flush() []Outbound { return h.FlushPrefixed(nil) }

// FlushPrefixed is Flush with prefix (the owner's transport header, say)
// written in front of each frame, so that the owner need not copy a frame
// to put a header in front of it: a busy leader's frame to one peer can be
// tens of megabytes. Receive takes the frame without the prefix.
// HostStats.BytesSent counts the frames without it.
func (h *Host) FlushPrefixed(prefix []byte) []Outbound {
	peers := make([]uint64, 0, len(h.queues))
	for to := range h.queues { //floe:unordered keys are sorted below
		peers = append(peers, to)
	}
	slices.Sort(peers)
	var out []Outbound
	for _, to := range peers {
		q := h.queues[to]
		n := len(q.beats) + len(q.beatResps) + len(q.msgs)
		if n == 0 {
			continue
		}
		frame := h.encodeFrame(prefix, q)
		out = append(out, Outbound{To: to, Frame: frame})
		h.stats.FramesSent++
		h.stats.BytesSent += uint64(len(frame) - len(prefix))
		h.stats.MessagesSent += uint64(n)
		h.stats.HeartbeatsCoalesced += uint64(len(q.beats) + len(q.beatResps))
	}
	clear(h.queues)
	return out
}

// Frame format, version 1 (u: unsigned varint; group ids in the two
// heartbeat lists are sorted and delta-encoded):
//
//	version byte
//	u count, then per heartbeat:          group delta u, term u, commit u
//	u count, then per heartbeat response: group delta u, term u
//	u count, then per message:            group u, length u, Message bytes
const frameVersion = 1

// encodeFrame encodes q's contents after prefix into one allocation of
// about the frame's size: each message's exact length is computed first
// (messageSize), so its length prefix is written before it and its entries'
// data is copied once, from the log's entries into the frame.
func (h *Host) encodeFrame(prefix []byte, q *peerQueue) []byte {
	return h.encodeFrameSizes(prefix, q, messageSize)
}

// encodeFrameSizes is encodeFrame with sizeOf for messageSize (tests give
// it a wrong one).
func (h *Host) encodeFrameSizes(prefix []byte, q *peerQueue, sizeOf func(*Message) int) []byte {
	sortBeats(q.beats)
	sortBeats(q.beatResps)
	size := len(prefix) + 1 + 3*binary.MaxVarintLen64 + len(q.beats)*3*binary.MaxVarintLen64 + len(q.beatResps)*2*binary.MaxVarintLen64
	h.sizes = slices.Grow(h.sizes[:0], len(q.msgs))
	for i := range q.msgs {
		ms := sizeOf(&q.msgs[i].msg)
		h.sizes = append(h.sizes, ms)
		size += uvarintSize(uint64(q.msgs[i].group)) + uvarintSize(uint64(ms)) + ms
	}
	b := make([]byte, 0, size)
	b = append(b, prefix...)
	b = append(b, frameVersion)
	b = appendBeats(b, q.beats, true)
	b = appendBeats(b, q.beatResps, false)
	b = binary.AppendUvarint(b, uint64(len(q.msgs)))
	for i := range q.msgs {
		b = binary.AppendUvarint(b, uint64(q.msgs[i].group))
		lenAt := len(b)
		b = binary.AppendUvarint(b, uint64(h.sizes[i]))
		at := len(b)
		b = appendMessage(b, &q.msgs[i].msg)
		if len(b)-at != h.sizes[i] {
			// messageSize disagrees with appendMessage (a bug: the codec
			// tests check they agree). Stay correct: the old way, the
			// message's real length spliced in front of it.
			msg := slices.Clone(b[at:])
			b = binary.AppendUvarint(b[:lenAt], uint64(len(msg)))
			b = append(b, msg...)
		}
	}
	return b
}

func sortBeats(beats []coalescedBeat) {
	sort.SliceStable(beats, func(i, j int) bool { return beats[i].group < beats[j].group })
}

func appendBeats(b []byte, beats []coalescedBeat, withCommit bool) []byte {
	b = binary.AppendUvarint(b, uint64(len(beats)))
	var prev GroupID
	for _, hb := range beats {
		b = binary.AppendUvarint(b, uint64(hb.group-prev))
		prev = hb.group
		b = binary.AppendUvarint(b, hb.term)
		if withCommit {
			b = binary.AppendUvarint(b, hb.commit)
		}
	}
	return b
}

// Receive decodes a frame from peer `from` and steps each message into its
// group. A malformed frame is refused whole (nothing is stepped). Messages
// for unknown groups, or that a group refuses, are counted and skipped.
func (h *Host) Receive(from uint64, frame []byte) error {
	msgs, err := h.decodeFrame(from, frame)
	if err != nil {
		return err
	}
	h.stats.FramesReceived++
	h.stats.MessagesReceived += uint64(len(msgs))
	for _, gm := range msgs {
		rn := h.groups[gm.group]
		if rn == nil {
			h.stats.UnknownGroup++
			continue
		}
		h.Changed(gm.group)
		if err := rn.Step(gm.msg); err != nil {
			h.stats.StepErrors++
		}
	}
	return nil
}

func (h *Host) decodeFrame(from uint64, frame []byte) ([]groupMessage, error) {
	d := decoder{b: frame}
	if d.byte() != frameVersion {
		d.fail()
	}
	var msgs []groupMessage
	msgs = h.decodeBeats(&d, from, msgs, MsgHeartbeat)
	msgs = h.decodeBeats(&d, from, msgs, MsgHeartbeatResp)
	n := d.count(3)
	for i := 0; i < n && d.err == nil; i++ {
		g := GroupID(d.uvarint())
		body := d.bytes()
		if d.err != nil {
			break
		}
		m, err := UnmarshalMessage(body)
		if err != nil || m.From != from || m.To != h.self {
			d.fail()
			break
		}
		msgs = append(msgs, groupMessage{group: g, msg: m})
	}
	if d.err == nil && d.off != len(frame) {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	return msgs, nil
}

func (h *Host) decodeBeats(d *decoder, from uint64, msgs []groupMessage, t MessageType) []groupMessage {
	minBytes := 2
	if t == MsgHeartbeat {
		minBytes = 3
	}
	n := d.count(minBytes)
	var g GroupID
	for i := 0; i < n && d.err == nil; i++ {
		g += GroupID(d.uvarint())
		m := Message{Type: t, From: from, To: h.self, Term: d.uvarint()}
		if t == MsgHeartbeat {
			m.Commit = d.uvarint()
		}
		msgs = append(msgs, groupMessage{group: g, msg: m})
	}
	return msgs
}
