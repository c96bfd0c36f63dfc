package consensus

import (
	"bytes"
	"errors"
	"math/rand"
	"reflect"
	"testing"
)

func sampleMessages() []Message {
	return []Message{
		{Type: MsgApp, To: 2, From: 1, Term: 3, LogTerm: 2, Index: 10, Commit: 9,
			Entries: []Entry{{Term: 3, Index: 11, Type: EntryNormal, Data: []byte("hello")}, {Term: 3, Index: 12, Type: EntryAppFirst}}},
		{Type: MsgAppResp, To: 1, From: 2, Term: 3, Index: 12, Reject: true, RejectHint: 7, LogTerm: 1},
		{Type: MsgVote, To: 3, From: 1, Term: 1 << 40, LogTerm: 5, Index: 1 << 33, Context: []byte("CampaignTransfer")},
		{Type: MsgHeartbeat, To: 2, From: 1, Term: 4, Commit: 100, Context: []byte{0, 1, 2}},
		{Type: MsgSnap, To: 2, From: 1, Term: 4, Snapshot: &Snapshot{
			Meta: SnapshotMeta{Index: 50, Term: 3, ConfState: ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}},
			Data: []byte("state")}},
		{Type: MsgSnap, To: 2, From: 1, Term: 4, Snapshot: &Snapshot{Meta: SnapshotMeta{Index: 1, Term: 1}}},
		{Type: MsgTimeoutNow, To: 2, From: 1, Term: 9},
	}
}

func TestMessageRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		b := m.Marshal()
		got, err := UnmarshalMessage(b)
		if err != nil {
			t.Fatalf("%s: %v", describeMessage(m), err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(m)) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
		}
	}
}

// normalize maps empty slices to nil: the encoding does not tell them apart.
func normalize(m Message) Message {
	if len(m.Context) == 0 {
		m.Context = nil
	}
	if len(m.Entries) == 0 {
		m.Entries = nil
	}
	for i := range m.Entries {
		if len(m.Entries[i].Data) == 0 {
			m.Entries[i].Data = nil
		}
	}
	if m.Snapshot != nil {
		s := *m.Snapshot
		if len(s.Data) == 0 {
			s.Data = nil
		}
		if len(s.Meta.ConfState.Voters) == 0 {
			s.Meta.ConfState.Voters = nil
		}
		if len(s.Meta.ConfState.Learners) == 0 {
			s.Meta.ConfState.Learners = nil
		}
		m.Snapshot = &s
	}
	return m
}

func TestMessageRejectsMalformed(t *testing.T) {
	good := sampleMessages()[0].Marshal()
	cases := map[string][]byte{
		"empty":         nil,
		"bad version":   append([]byte{9}, good[1:]...),
		"unknown flags": append(append([]byte{}, good[:2]...), append([]byte{0x80}, good[3:]...)...),
		"trailing byte": append(append([]byte{}, good...), 0),
		"huge count":    {codecVersion, byte(MsgApp), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"varint overflow": {codecVersion, byte(MsgApp), 0,
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for i := 0; i < len(good); i++ {
		cases["truncated at "+string(rune('a'+i%26))+string(rune('0'+i/26))] = good[:i]
	}
	for name, b := range cases {
		if _, err := UnmarshalMessage(b); !errors.Is(err, ErrCodec) {
			t.Errorf("%s: err = %v, want ErrCodec", name, err)
		}
	}
}

func TestConfChangeRoundTrip(t *testing.T) {
	cc := ConfChange{Type: ConfAddLearner, NodeID: 1 << 50, Context: []byte("host:9092")}
	got, err := UnmarshalConfChange(cc.Marshal())
	if err != nil || !reflect.DeepEqual(got, cc) {
		t.Fatalf("got %+v, %v", got, err)
	}
	b := cc.Marshal()
	for i := 0; i < len(b); i++ {
		if _, err := UnmarshalConfChange(b[:i]); err == nil {
			t.Fatalf("truncated at %d accepted", i)
		}
	}
	if _, err := UnmarshalConfChange(append(b, 1)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

// TestUnmarshalRandomBytes: random garbage and random mutations of valid
// encodings are either rejected or decode to something that re-encodes
// to an equivalent message; nothing panics.
func TestUnmarshalRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	valid := sampleMessages()
	for i := 0; i < 20000; i++ {
		var b []byte
		if i%2 == 0 {
			b = make([]byte, rng.Intn(64))
			rng.Read(b)
		} else {
			b = valid[rng.Intn(len(valid))].Marshal()
			for j := rng.Intn(4); j >= 0; j-- {
				b[rng.Intn(len(b))] ^= byte(1 << rng.Intn(8))
			}
		}
		checkDecode(t, b)
	}
}

func checkDecode(t *testing.T, b []byte) {
	m, err := UnmarshalMessage(b)
	if err != nil {
		if !errors.Is(err, ErrCodec) {
			t.Fatalf("error %v does not wrap ErrCodec", err)
		}
		return
	}
	again, err := UnmarshalMessage(m.Marshal())
	if err != nil {
		t.Fatalf("re-encoding of a decoded message does not decode: %v", err)
	}
	if !reflect.DeepEqual(normalize(again), normalize(m)) {
		t.Fatalf("re-encoding changed the message:\n%+v\n%+v", m, again)
	}
}

// FuzzUnmarshal: go test ./consensus -run XXX -fuzz FuzzUnmarshal
func FuzzUnmarshal(f *testing.F) {
	for _, m := range sampleMessages() {
		f.Add(m.Marshal())
	}
	f.Add([]byte{})
	f.Add([]byte{codecVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		checkDecode(t, b)
		if !bytes.Equal(orig, b) {
			t.Fatal("decoding modified its input")
		}
	})
}

func BenchmarkMessageMarshal(b *testing.B) {
	m := Message{Type: MsgApp, To: 2, From: 1, Term: 3, LogTerm: 3, Index: 1000, Commit: 999}
	for i := 0; i < 16; i++ {
		m.Entries = append(m.Entries, Entry{Term: 3, Index: 1001 + uint64(i), Data: make([]byte, 1024)})
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(m.Marshal())))
	for i := 0; i < b.N; i++ {
		buf := m.Marshal()
		if _, err := UnmarshalMessage(buf); err != nil {
			b.Fatal(err)
		}
	}
}
