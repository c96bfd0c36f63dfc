package group

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// randImage returns a random consumer group image: every field set or not,
// every map and slice nil, empty or filled.
func randImage(rng *rand.Rand) *consumerGroup {
	str := func() string { return fmt.Sprintf("s%d", rng.Intn(5)) }
	strPtr := func() *string {
		if rng.Intn(2) == 0 {
			return nil
		}
		s := str()
		return &s
	}
	parts := func() []int32 {
		switch rng.Intn(3) {
		case 0:
			return nil
		case 1:
			return []int32{}
		}
		ps := make([]int32, 1+rng.Intn(4))
		for i := range ps {
			ps[i] = rng.Int31n(10)
		}
		return ps
	}
	asg := func() assignment {
		switch rng.Intn(3) {
		case 0:
			return nil
		case 1:
			return assignment{}
		}
		a := assignment{}
		for range 1 + rng.Intn(3) {
			a[str()] = parts()
		}
		return a
	}
	cg := &consumerGroup{Epoch: rng.Int31n(100), AssignmentEpoch: rng.Int31n(100)}
	switch rng.Intn(3) {
	case 1:
		cg.Metadata = map[string]int32{}
	case 2:
		cg.Metadata = map[string]int32{str(): rng.Int31n(9), str(): rng.Int31n(9)}
	}
	if rng.Intn(5) > 0 {
		cg.Members = map[string]*cmember{}
	}
	for i := range rng.Intn(4) {
		if cg.Members == nil {
			break
		}
		m := &cmember{
			ID: fmt.Sprintf("m%d", i), InstanceID: strPtr(), Rack: strPtr(),
			ClientID: str(), ClientHost: str(), Principal: str(),
			Epoch: rng.Int31n(50), PrevEpoch: rng.Int31n(50), State: memberState(rng.Intn(3)),
			Regex: str(), Assignor: str(), RebalanceMillis: rng.Int31n(1000),
			Assigned: asg(), Revoking: asg(), Target: asg(),
		}
		if rng.Intn(2) == 0 {
			m.Topics = []string{str(), str()}
		}
		if rng.Intn(2) == 0 {
			m.Classic = &classicMember{SessionMillis: rng.Int31n(9000)}
			switch rng.Intn(3) {
			case 1:
				m.Classic.Protocols = []classicProtocol{}
			case 2:
				md := []byte(nil)
				if rng.Intn(2) == 0 {
					md = []byte{byte(rng.Intn(256)), 7}
				}
				m.Classic.Protocols = []classicProtocol{{Name: str(), Metadata: md}, {Name: str()}}
			}
		}
		cg.Members[m.ID] = m
	}
	return cg
}

// imageTexts returns JSON texts of consumer group images: encodings of
// random images, and hand-written ones with the shapes encoding cannot
// produce (empty lists and maps written out, nulls, base64 "", a member
// under the wrong id, a null member, unknown fields, a wrong format).
func imageTexts(rng *rand.Rand, n int) [][]byte {
	var out [][]byte
	for range n {
		out = append(out, encodeConsumerGroup(randImage(rng)))
	}
	for _, s := range []string{
		`{"format":1,"epoch":3,"assignment_epoch":2,"members":{}}`,
		`{"format":1,"epoch":3,"members":null}`,
		`{"format":1}`,
		`{"format":1,"metadata":{},"members":{"a":{"id":"a","topics":[],"assigned":{},"revoking":{"t":[]},"target":{"t":null}}}}`,
		`{"format":1,"members":{"a":{"id":"a","instance":null,"rack":"r","classic":{"session_ms":5,"protocols":[{"name":"x","metadata":""}]}}}}`,
		`{"format":1,"members":{"a":{"id":"a","classic":{"protocols":null}}}}`,
		`{"format":1,"members":{"a":{"id":"a","assigned":null}}}`,
		`{"format":1,"members":{"a":{"id":"b"}}}`,
		`{"format":1,"members":{"a":null}}`,
		`{"format":1,"members":{"a":{"id":"a","unknown":[1,2]}},"extra":true}`,
		`{"format":2,"members":{}}`,
		`{"format":1,"members":{"a":{"id":"a","epoch":"x"}}}`,
		`not json`,
		`{"format":1,"EPOCH":4,"Members":{"a":{"ID":"a"}}}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// scribbleImage changes every map, slice and pointed-to value of an image
// in place, as a coordinator changing its group would.
func scribbleImage(cg *consumerGroup) {
	cg.Epoch = -1
	for k := range cg.Metadata {
		cg.Metadata[k] = -1
	}
	if cg.Metadata != nil {
		cg.Metadata["added"] = 1
	}
	for id, m := range cg.Members {
		if m == nil {
			continue
		}
		m.Epoch, m.ID = -1, "x"
		for _, p := range []*string{m.InstanceID, m.Rack} {
			if p != nil {
				*p = "scribbled"
			}
		}
		for i := range m.Topics {
			m.Topics[i] = "scribbled"
		}
		for _, a := range []assignment{m.Assigned, m.Revoking, m.Target} {
			for t, ps := range a {
				for i := range ps {
					ps[i] = -1
				}
				a[t] = append(ps, 99)
			}
			if a != nil {
				a["added"] = nil
			}
		}
		if m.Classic != nil {
			m.Classic.SessionMillis = -1
			for i := range m.Classic.Protocols {
				m.Classic.Protocols[i].Name = "scribbled"
				for j := range m.Classic.Protocols[i].Metadata {
					m.Classic.Protocols[i].Metadata[j] ^= 0xff
				}
			}
		}
		cg.Members[id+"-added"] = &cmember{ID: id + "-added"}
	}
}

// TestImagesDecodeLikeUnmarshal checks the replay's memo of decoded
// consumer-group images against decodeConsumerGroup (encoding/json): for
// every text, the first decode (a miss) and three more (hits) return
// values deeply equal to a fresh decode (nil and empty maps and slices
// told apart), or the same error; and a returned image scribbled over
// everywhere (the miss's and two hits') changes neither the memo's later
// answers nor the copy another decode returned.
func TestImagesDecodeLikeUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	texts := imageTexts(rng, 3000)
	im := new(Images)
	decodes := 0
	for round := range 2 {
		for i, b := range texts {
			want, wantErr := decodeConsumerGroup(b)
			var kept *consumerGroup
			for j := range 4 {
				got, err := im.decode(b)
				decodes++
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("round %d text %d (%s) decode %d: error %v, want %v", round, i, b, j, err, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d text %d (%s) decode %d:\n got %s\nwant %s", round, i, b, j, dump(got), dump(want))
				}
				if j == 1 {
					kept = got // scribbling the others must leave it as it is
				} else if got != nil {
					scribbleImage(got)
				}
			}
			if !reflect.DeepEqual(kept, want) {
				t.Fatalf("round %d text %d (%s): a scribbled copy changed another:\n got %s\nwant %s", round, i, b, dump(kept), dump(want))
			}
		}
	}
	if len(im.m) == 0 {
		t.Fatal("the memo kept nothing")
	}
	var nilIm *Images
	for _, b := range texts[:50] {
		want, wantErr := decodeConsumerGroup(b)
		got, err := nilIm.decode(b)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("nil memo: %s: got %v %v, want %v %v", b, dump(got), err, dump(want), wantErr)
		}
	}
}

// TestImagesBounded checks the memo starts again when its keys pass the
// bound, and still answers like a fresh decode.
func TestImagesBounded(t *testing.T) {
	im := new(Images)
	rng := rand.New(rand.NewSource(2))
	b := encodeConsumerGroup(randImage(rng))
	im.bytes = imagesBytesMax - len(b) + 1
	im.m = map[string]*consumerGroup{"old": newConsumerGroup()}
	got, err := im.decode(b)
	want, _ := decodeConsumerGroup(b)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", dump(got), err, dump(want))
	}
	if len(im.m) != 1 || im.bytes != len(b) {
		t.Fatalf("after the bound: %d images, %d bytes; want 1, %d", len(im.m), im.bytes, len(b))
	}
}

func dump(cg *consumerGroup) string {
	if cg == nil {
		return "<nil>"
	}
	b, _ := json.Marshal(cg)
	return fmt.Sprintf("%s committed=%q writing=%d failed=%v", b, cg.committed, cg.writing, cg.failed)
}

// TestImagesCloneCoversEveryField fails when the image's types gain or
// lose a durable (exported) field: cloneImage copies each by name, so a new
// one must be added there (and to randImage).
func TestImagesCloneCoversEveryField(t *testing.T) {
	want := map[string]string{
		"consumerGroup":   "Epoch AssignmentEpoch Members Metadata",
		"cmember":         "ID InstanceID Rack ClientID ClientHost Principal Epoch PrevEpoch State Topics Regex Assignor RebalanceMillis Assigned Revoking Target Classic",
		"classicMember":   "SessionMillis Protocols",
		"classicProtocol": "Name Metadata",
	}
	for _, v := range []any{consumerGroup{}, cmember{}, classicMember{}, classicProtocol{}} {
		typ := reflect.TypeOf(v)
		got := ""
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				got += " " + f.Name
			}
		}
		if got != " "+want[typ.Name()] {
			t.Errorf("%s's durable fields are%s; cloneImage copies %s", typ.Name(), got, want[typ.Name()])
		}
	}
}
