package node

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/floe-broker/floe/node/share"
)

// TestLastShareStatesMatchesForwardReplay checks the backwards, decode-
// once replay of share-state records against the plain one: every record
// decoded in log order, the last decodable value kept, a tombstone
// dropping it. The sequences mix keys spelled two ways (the same Key),
// undecodable keys and values, and tombstones.
func TestLastShareStatesMatchesForwardReplay(t *testing.T) {
	keys := []share.Key{{Group: "g", Topic: "t", Partition: 0}, {Group: "g", Topic: "t", Partition: 1}, {Group: "h", Topic: "t", Partition: 0}}
	spellings := func(k share.Key) []string {
		// The same Key as JSON with other spacing and field order.
		other := string(binary.BigEndian.AppendUint16(nil, uint16(share.KeyVersion))) +
			fmt.Sprintf(` {"partition": %d, "topic": %q, "group": %q}`, k.Partition, k.Topic, k.Group)
		return []string{string(share.EncodeKey(k)), other}
	}
	badKey := string(binary.BigEndian.AppendUint16(nil, uint16(share.KeyVersion))) + "{not json"
	forward := func(recs []shareStateRecord) map[share.Key]share.State {
		states := map[share.Key]share.State{}
		for _, rec := range recs {
			k, err := share.DecodeKey([]byte(rec.key))
			if err != nil {
				continue
			}
			if rec.value == nil {
				delete(states, k)
				continue
			}
			if s, err := share.DecodeState(rec.value); err == nil {
				states[k] = s
			}
		}
		return states
	}
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 2000; trial++ {
		var recs []shareStateRecord
		for i := rng.Intn(12); i > 0; i-- {
			var rec shareStateRecord
			if rng.Intn(10) == 0 {
				rec.key = badKey
			} else {
				sp := spellings(keys[rng.Intn(len(keys))])
				rec.key = sp[rng.Intn(len(sp))]
			}
			switch rng.Intn(5) {
			case 0:
				rec.value = nil
			case 1:
				rec.value = []byte("{broken")
			default:
				start := int64(rng.Intn(100))
				rec.value = share.EncodeState(share.State{Start: start, End: start + int64(rng.Intn(10))})
			}
			recs = append(recs, rec)
		}
		want, got := forward(recs), lastShareStates(recs)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("trial %d: records %q\nforward replay %v\nlastShareStates %v", trial, recs, want, got)
		}
	}
}
