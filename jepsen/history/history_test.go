package history

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func sample() History {
	return History{
		{Index: 0, Process: 1, Type: Invoke, F: Produce, Time: 10, Records: []Record{{"t", 0, -1, "a"}}},
		{Index: 1, Process: 2, Type: Invoke, F: Fetch, Time: 11, Offsets: []Offset{{"t", 0, 0}}},
		{Index: 2, Process: 1, Type: OK, F: Produce, Time: 12, Records: []Record{{"t", 0, 0, "a"}}},
		{Index: 3, Process: 2, Type: OK, F: Fetch, Time: 13, Records: []Record{{"t", 0, 0, "a"}}, HWMs: []Offset{{"t", 0, 1}}},
		{Index: 4, Process: 3, Type: Invoke, F: Commit, Time: 14, Group: "g", Offsets: []Offset{{"t", 0, 1}}},
		{Index: 5, Process: -1, Type: Info, F: Nemesis, Time: 15, Note: "kill n1"},
	}
}

func TestJSONLinesRoundTrip(t *testing.T) {
	h := sample()
	var buf bytes.Buffer
	if err := Write(&buf, h); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != len(h) {
		t.Fatalf("%d lines for %d events", n, len(h))
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(h) {
		t.Fatalf("decoded %d events, want %d", len(got), len(h))
	}
	for i := range h {
		if got[i].String() != h[i].String() {
			t.Errorf("event %d: got %s want %s", i, got[i], h[i])
		}
	}
}

func TestDecodeErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"index":0,"process":1,"type":"invoke","f":"produce","time":0}` + "\n" + `{"index":1,"bogus":3}`, "line 2"},
		{"\n\n{not json", "line 3"},
		{`{"index":0} {"index":1}`, "line 1"},
	} {
		_, err := Decode(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%q) = %v, want an error naming %s", tc.in, err, tc.want)
		}
	}
}

func TestDecodeLongLineWithoutNewline(t *testing.T) {
	op := Op{Process: 1, Type: Invoke, F: Produce, Records: []Record{{"t", 0, -1, strings.Repeat("x", 1<<20)}}}
	got, err := Decode(strings.NewReader(op.String()))
	if err != nil || len(got) != 1 || len(got[0].Records[0].Value) != 1<<20 {
		t.Fatalf("long line: %v, %d events", err, len(got))
	}
}

func TestPairs(t *testing.T) {
	ops, err := Pairs(sample())
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 4 {
		t.Fatalf("%d operations, want 4", len(ops))
	}
	if ops[0].Done.Index != 2 || !ops[0].Acked() {
		t.Errorf("produce paired with %d, acked %v", ops[0].Done.Index, ops[0].Acked())
	}
	if ops[1].Done.Index != 3 || ops[1].TP() != (TP{"t", 0}) {
		t.Errorf("fetch paired with %d on %v", ops[1].Done.Index, ops[1].TP())
	}
	if ops[2].Done.Type != Info || ops[2].Done.Time != Never || ops[2].Acked() {
		t.Errorf("unfinished commit: %+v", ops[2].Done)
	}
	if ops[3].Invoke.F != Nemesis || ops[3].Done.Index != 5 {
		t.Errorf("nemesis event: %+v", ops[3])
	}
}

func TestNotDurableIsNotAcked(t *testing.T) {
	h := sample()[:3]
	h[0].NotDurable = true
	ops, err := Pairs(h)
	if err != nil {
		t.Fatal(err)
	}
	if ops[0].Acked() {
		t.Error("an acks=1 produce counted as acknowledged")
	}
}

func TestValidateRejectsMalformed(t *testing.T) {
	cases := map[string]func(History) History{
		"index":         func(h History) History { h[1].Index = 7; return h },
		"time":          func(h History) History { h[2].Time = 1; return h },
		"type":          func(h History) History { h[0].Type = "done"; return h },
		"function":      func(h History) History { h[0].F = "write"; return h },
		"busy process":  func(h History) History { h[1].Process = 1; return h },
		"orphan":        func(h History) History { h[2].Process = 9; return h },
		"wrong f":       func(h History) History { h[2].F = Fetch; h[2].Records = nil; return h },
		"two parts":     func(h History) History { h[0].Records = append(h[0].Records, Record{"t", 1, -1, "b"}); return h },
		"no records":    func(h History) History { h[0].Records = nil; return h },
		"hwm part":      func(h History) History { h[1].HWMs = []Offset{{"t", 9, 3}}; return h },
		"fetch offsets": func(h History) History { h[1].Offsets = nil; return h },
		"dup value": func(h History) History {
			return append(h, Op{Index: 6, Process: 4, Type: Invoke, F: Produce, Time: 20, Records: []Record{{"t", 1, -1, "a"}}})
		},
		"assign invoke": func(h History) History { h[5].F, h[5].Type = Assign, Invoke; return h },
	}
	for name, mutate := range cases {
		if err := Validate(mutate(sample())); err == nil {
			t.Errorf("%s: malformed history accepted", name)
		}
	}
	if err := Validate(sample()); err != nil {
		t.Errorf("well-formed history rejected: %v", err)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	var buf bytes.Buffer
	var clock int64
	var mu sync.Mutex
	r := NewRecorder(&buf, func() int64 { mu.Lock(); defer mu.Unlock(); clock += 3; return clock })
	var wg sync.WaitGroup
	for p := int64(0); p < 8; p++ {
		wg.Add(1)
		go func(p int64) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				inv := r.Invoke(Op{Process: p, F: Commit, Group: "g", Offsets: []Offset{{"t", 0, int64(i)}}})
				r.Complete(inv, OK, Op{Offsets: inv.Offsets})
			}
		}(p)
	}
	wg.Wait()
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	h := r.History()
	if len(h) != 800 {
		t.Fatalf("%d events, want 800", len(h))
	}
	if err := Validate(h); err != nil {
		t.Fatalf("recorded history malformed: %v", err)
	}
	disk, err := Decode(&buf)
	if err != nil || len(disk) != len(h) {
		t.Fatalf("streamed history: %v, %d events", err, len(disk))
	}
}
