package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func chain(n int) [][]byte {
	var out [][]byte
	prev := Genesis
	for i := 0; i < n; i++ {
		e := Event{Kind: Change, TimeMs: int64(1000 + i), Node: 1, UID: fmt.Sprint(i), Principal: "User:admin",
			Client: "10.0.0.1:5000", Listener: "PLAINTEXT", API: "CreateTopics", Action: "create",
			Resource: Resource{Type: "topic", Name: fmt.Sprintf("t%d", i)}, Success: true}
		v := Link(e.Record(), prev)
		prev = Hash(v)
		out = append(out, v)
	}
	return out
}

func verify(values [][]byte, offsets []int64) *Break {
	v := NewVerifier()
	for i, val := range values {
		if b := v.Next(0, offsets[i], val); b != nil {
			return b
		}
	}
	return nil
}

func seq(from, n int) []int64 {
	var o []int64
	for i := 0; i < n; i++ {
		o = append(o, int64(from+i))
	}
	return o
}

func TestChainHoldsAndBreaks(t *testing.T) {
	c := chain(6)
	if b := verify(c, seq(0, 6)); b != nil {
		t.Fatalf("an intact chain: %v", b)
	}
	// Retention removed the start: the first record read is trusted.
	if b := verify(c[2:], seq(2, 4)); b != nil {
		t.Fatalf("a chain whose start was retained away: %v", b)
	}

	tampered := func(i int, f func(*Record)) [][]byte {
		out := append([][]byte(nil), c...)
		r, _ := Unmarshal(out[i])
		f(&r)
		out[i] = r.Marshal()
		return out
	}
	for _, tc := range []struct {
		what    string
		values  [][]byte
		offsets []int64
		at      int64
	}{
		{"a changed principal", tampered(3, func(r *Record) { r.Actor.User.Name = "User:eve" }), seq(0, 6), 4},
		{"a changed outcome on the last but one", tampered(4, func(r *Record) { r.Status = "Failure" }), seq(0, 6), 5},
		{"a forged link", tampered(2, func(r *Record) { r.Unmapped.Floe.PrevSHA256 = strings.Repeat("0", 64) }), seq(0, 6), 2},
		{"a record removed, offsets renumbered", append(append([][]byte(nil), c[:2]...), c[3:]...), seq(0, 5), 2},
		{"a record removed, offsets kept", append(append([][]byte(nil), c[:2]...), c[3:]...), []int64{0, 1, 3, 4, 5}, 3},
		{"two records swapped", [][]byte{c[0], c[2], c[1], c[3]}, seq(0, 4), 1},
		{"a first record that is not the genesis", c[1:], seq(0, 5), 0},
		{"garbage", [][]byte{c[0], []byte("not json")}, seq(0, 2), 1},
	} {
		b := verify(tc.values, tc.offsets)
		if b == nil || b.Offset != tc.at {
			t.Errorf("%s: got %v, want a break at offset %d", tc.what, b, tc.at)
		}
	}
}

func TestRecordShape(t *testing.T) {
	e := Event{Kind: Authorization, TimeMs: 42, Node: 2, UID: "2-1", Principal: "User:bob", Client: "[::1]:9000",
		Listener: "SASL_SSL", API: "Produce", Action: "WRITE", Resource: Resource{Type: "topic", Name: "orders"},
		Reason: "no ACL allows it"}
	v := Link(e.Record(), Genesis)
	var doc map[string]any
	if err := json.Unmarshal(v, &doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"class_uid":6003`, `"type_uid":600303`, `"status":"Failure"`, `"decision":"deny"`,
		`"src_endpoint":{"ip":"::1","port":9000}`, `"name":"User:bob"`, `"prev_sha256":"` + strings.Repeat("0", 64)} {
		if !bytes.Contains(v, []byte(want)) {
			t.Errorf("record lacks %s:\n%s", want, v)
		}
	}
	if !bytes.Equal(v, Link(e.Record(), Genesis)) {
		t.Fatalf("the same event encodes to different bytes")
	}
	a := Event{Kind: Authentication, Principal: "User:x", Mechanism: "SCRAM-SHA-256", Success: true}.Record()
	if a.ClassUID != 3002 || a.TypeUID != 300201 || a.AuthProtocol != "SCRAM-SHA-256" {
		t.Fatalf("authentication record %+v", a)
	}
}
