package consensus

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// appendLoad queues, from node 1, what a busy leader's pass queues for two
// followers: `groups` groups each sending every follower one MsgApp of
// `entries` entries of `size` bytes, plus a heartbeat each.
func appendLoad(h *Host, groups, entries, size int) {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	for g := 1; g <= groups; g++ {
		ents := make([]Entry, entries)
		for i := range ents {
			ents[i] = Entry{Term: 7, Index: uint64(1000*g + i), Data: data}
		}
		for _, to := range []uint64{2, 3} {
			h.Enqueue(GroupID(g), []Message{
				{Type: MsgApp, From: 1, To: to, Term: 7, LogTerm: 7, Index: uint64(1000*g - 1), Commit: uint64(1000*g - 5), Entries: ents},
				{Type: MsgHeartbeat, From: 1, To: to, Term: 7, Commit: uint64(1000 * g)},
			})
		}
	}
}

// BenchmarkHostFlushAppends: one reactor pass's frames on a busy leader of
// 24 groups (RF=3): each follower gets 24 MsgApps of 16 entries of 64 KiB
// (24 MiB a frame, 48 MiB an op), encoded with the node's one-byte frame
// header in front (node/ready.go flush). B/op and allocs/op count the
// copies; the queueing itself allocates little.
//
//	go test ./consensus -run XXX -bench HostFlushAppends -benchmem
func BenchmarkHostFlushAppends(b *testing.B) {
	h := NewHost(1)
	b.ReportAllocs()
	var bytes int
	for i := 0; i < b.N; i++ {
		appendLoad(h, 24, 16, 64<<10)
		for _, out := range benchFlushWithHeader(h) {
			bytes += len(out.Frame)
		}
	}
	b.SetBytes(int64(bytes / b.N))
}

// BenchmarkHostDecodeAppends: the follower's side, decoding one such frame.
func BenchmarkHostDecodeAppends(b *testing.B) {
	h := NewHost(1)
	appendLoad(h, 24, 16, 64<<10)
	frame := h.Flush()[0].Frame
	rx := NewHost(2)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for i := 0; i < b.N; i++ {
		if _, err := rx.decodeFrame(1, frame); err != nil {
			b.Fatal(err)
		}
	}
}

// encodeFrameV0 is the frame encoder before FlushPrefixed (366690c),
// kept as the model the new one must match byte for byte: each message
// encoded, then its length spliced in front of it.
func encodeFrameV0(q *peerQueue) []byte {
	sortBeats(q.beats)
	sortBeats(q.beatResps)
	var b []byte
	b = append(b, frameVersion)
	b = appendBeats(b, q.beats, true)
	b = appendBeats(b, q.beatResps, false)
	b = binary.AppendUvarint(b, uint64(len(q.msgs)))
	for i := range q.msgs {
		b = binary.AppendUvarint(b, uint64(q.msgs[i].group))
		lenAt := len(b)
		b = appendMessage(b, &q.msgs[i].msg)
		var lenBuf [binary.MaxVarintLen64]byte
		n := binary.PutUvarint(lenBuf[:], uint64(len(b)-lenAt))
		b = slices.Insert(b, lenAt, lenBuf[:n]...)
	}
	return b
}

// randUvarint draws numbers of every encoded length, 1 to 10 bytes, and
// the edges between lengths.
func randUvarint(rng *rand.Rand) uint64 {
	switch rng.Intn(4) {
	case 0:
		return uint64(rng.Intn(3))
	case 1:
		return 1<<(7*uint(rng.Intn(10))) - uint64(rng.Intn(2)) // 2^(7k) and 2^(7k)-1
	default:
		return rng.Uint64() >> uint(rng.Intn(64))
	}
}

func randBytes(rng *rand.Rand, max int) []byte {
	switch rng.Intn(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	n := rng.Intn(max + 1)
	if rng.Intn(8) == 0 {
		n = 127 + rng.Intn(3) // the length's varint grows at 128
	}
	p := make([]byte, n)
	rng.Read(p)
	return p
}

func randMessage(rng *rand.Rand, from, to uint64) Message {
	m := Message{
		Type: MessageType(rng.Intn(int(MsgTimeoutNow) + 1)), From: from, To: to,
		Term: randUvarint(rng), LogTerm: randUvarint(rng), Index: randUvarint(rng),
		Commit: randUvarint(rng), RejectHint: randUvarint(rng), Reject: rng.Intn(2) == 0,
		Context: randBytes(rng, 40),
	}
	if m.Type == MsgHeartbeat || m.Type == MsgHeartbeatResp {
		m.Type = MsgApp // Enqueue would coalesce some; they are tested apart
	}
	n := rng.Intn(4)
	if rng.Intn(4) == 0 {
		n = 100 + rng.Intn(200) // many entries: the count's varint is 2 bytes
	}
	for i := 0; i < n; i++ {
		size := 300
		if rng.Intn(50) == 0 {
			size = 70000 // a length of 3 varint bytes
		}
		m.Entries = append(m.Entries, Entry{Term: randUvarint(rng), Index: randUvarint(rng),
			Type: EntryType(rng.Intn(256)), Data: randBytes(rng, size)})
	}
	if rng.Intn(5) == 0 {
		s := &Snapshot{Data: randBytes(rng, 200)}
		s.Meta.Index, s.Meta.Term = randUvarint(rng), randUvarint(rng)
		for i := rng.Intn(5); i > 0; i-- {
			s.Meta.ConfState.Voters = append(s.Meta.ConfState.Voters, randUvarint(rng))
		}
		for i := rng.Intn(3); i > 0; i-- {
			s.Meta.ConfState.Learners = append(s.Meta.ConfState.Learners, randUvarint(rng))
		}
		m.Snapshot = s
	}
	return m
}

// TestMessageSizeExact: messageSize is the length appendMessage writes,
// for messages with fields of every varint length, empty and large byte
// strings, many entries and snapshots. encodeFrame writes each message's
// length prefix from it before the message.
func TestMessageSizeExact(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for i := 0; i < 3000; i++ {
		m := randMessage(rng, randUvarint(rng), randUvarint(rng))
		if got, want := messageSize(&m), len(appendMessage(nil, &m)); got != want {
			t.Fatalf("message %d: messageSize %d, encoding %d bytes: %s", i, got, want, describeMessage(m))
		}
	}
	for _, m := range sampleMessages() {
		if got, want := messageSize(&m), len(m.Marshal()); got != want {
			t.Fatalf("messageSize %d, encoding %d bytes: %s", got, want, describeMessage(m))
		}
	}
}

// TestHostFrameMatchesV0: frames with many messages and entries, with and
// without a prefix, are the old encoder's bytes after the prefix, decode
// to the messages queued, and take one allocation of at least their size
// (no growth while encoding).
func TestHostFrameMatchesV0(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 60; round++ {
		h := NewHost(1)
		want := map[uint64][]groupMessage{} // per peer, what Enqueue queues whole
		v0 := map[uint64]*peerQueue{}
		for n := rng.Intn(40); n > 0; n-- {
			g := GroupID(randUvarint(rng))
			to := uint64(2 + rng.Intn(3))
			var msgs []Message
			for k := rng.Intn(4); k > 0; k-- {
				switch rng.Intn(3) {
				case 0:
					msgs = append(msgs, Message{Type: MsgHeartbeat, From: 1, To: to, Term: randUvarint(rng), Commit: randUvarint(rng)})
				case 1:
					msgs = append(msgs, Message{Type: MsgHeartbeatResp, From: 1, To: to, Term: randUvarint(rng)})
				default:
					m := randMessage(rng, 1, to)
					msgs = append(msgs, m)
					want[to] = append(want[to], groupMessage{group: g, msg: m})
				}
			}
			h.Enqueue(g, msgs)
			// The model's queue: the same Enqueue on a second host.
			h0 := &Host{self: 1, queues: v0}
			h0.Enqueue(g, msgs)
		}
		var prefix []byte
		if round%2 == 1 {
			prefix = []byte{byte(round), 0xff, 3}[:1+round%3]
		}
		out := h.FlushPrefixed(prefix)
		if len(out) != len(v0) {
			t.Fatalf("round %d: %d frames, want %d", round, len(out), len(v0))
		}
		for _, o := range out {
			old := encodeFrameV0(v0[o.To])
			if !bytes.Equal(o.Frame[:len(prefix)], prefix) {
				t.Fatalf("round %d peer %d: prefix %x, want %x", round, o.To, o.Frame[:len(prefix)], prefix)
			}
			frame := o.Frame[len(prefix):]
			if !bytes.Equal(frame, old) {
				t.Fatalf("round %d peer %d: frame differs from the old encoder's (%d bytes, want %d)", round, o.To, len(frame), len(old))
			}
			if cap(o.Frame) < len(o.Frame) || cap(o.Frame) > len(o.Frame)+64+32*len(v0[o.To].beats)+32*len(v0[o.To].beatResps) {
				t.Fatalf("round %d peer %d: frame cap %d for %d bytes", round, o.To, cap(o.Frame), len(o.Frame))
			}
			rx := NewHost(o.To)
			got, err := rx.decodeFrame(1, frame)
			if err != nil {
				t.Fatalf("round %d peer %d: %v", round, o.To, err)
			}
			var whole []groupMessage
			for _, gm := range got {
				if t := gm.msg.Type; t == MsgHeartbeat || t == MsgHeartbeatResp {
					continue
				}
				whole = append(whole, gm)
			}
			if len(whole) != len(want[o.To]) {
				t.Fatalf("round %d peer %d: %d messages decoded, want %d", round, o.To, len(whole), len(want[o.To]))
			}
			for i := range whole {
				if whole[i].group != want[o.To][i].group || !reflect.DeepEqual(normalize(whole[i].msg), normalize(want[o.To][i].msg)) {
					t.Fatalf("round %d peer %d message %d: got %s, want %s", round, o.To, i,
						describeMessage(whole[i].msg), describeMessage(want[o.To][i].msg))
				}
			}
		}
	}
}

// TestHostFrameFallback: were messageSize ever wrong, the frame is still
// right (encodeFrame's check), only slower.
func TestHostFrameFallback(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	h := NewHost(1)
	var msgs []Message
	for i := 0; i < 20; i++ {
		msgs = append(msgs, randMessage(rng, 1, 2))
	}
	h.Enqueue(5, msgs)
	q := h.queues[2]
	old := encodeFrameV0(&peerQueue{msgs: slices.Clone(q.msgs)})
	h.sizes = nil
	got := h.encodeFrameSizes([]byte{9}, q, func(m *Message) int { return messageSize(m) + int(m.Index%3) - 1 })
	if !bytes.Equal(got[1:], old) {
		t.Fatal("frame wrong when messageSize is wrong")
	}
}
