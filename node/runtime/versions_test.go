package runtime

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/kafka"
)

// TestAdvertisedAPIs: a broker advertises exactly the node's table
// (node.Versions) and the protocol server's own APIs (kafka.ServerAPIs),
// which do not overlap: each API's versions are stated in one place.
func TestAdvertisedAPIs(t *testing.T) {
	want := map[int16][2]int16{}
	for _, v := range node.Versions() {
		want[v.Key] = [2]int16{v.Min, v.Max}
	}
	for _, v := range kafka.ServerAPIs() {
		if _, dup := want[v.Key]; dup {
			t.Errorf("%s is in both the node's table and the server's own", kmsg.NameForKey(v.Key))
		}
		want[v.Key] = [2]int16{v.MinVersion, v.MaxVersion}
	}

	b := startBroker(t, t.TempDir())
	defer b.Shutdown(context.Background())
	cl := client(t, b)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "floe-test", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %v (error code %d)", err, resp.ErrorCode)
	}
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	keys := map[int16]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	var all []int16
	for k := range keys {
		all = append(all, k)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, k := range all {
		w, inWant := want[k]
		g, inGot := got[k]
		if inWant != inGot || w != g {
			t.Errorf("%s: advertised %v (%v), the tables say %v (%v)", kmsg.NameForKey(k), g, inGot, w, inWant)
		}
	}
}
