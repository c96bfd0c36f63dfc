package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func electReq(kind int8, timeoutMs int32, topic string, parts ...int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType, req.TimeoutMillis = 2, kind, timeoutMs
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: topic, Partitions: parts}}
	return req
}

// electCodes is each answered partition's error code, in order.
func electCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, t := range resp.(*kmsg.ElectLeadersResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// TestElectPreferredLeader: leadership moved off the preferred replica
// comes back when a broker that neither leads nor is preferred asks for a
// preferred election, within a timeout shorter than the automatic leader
// balance's period (so the request, not balanceLeaders, moved it); a
// partition already led by its preferred replica needs no election; an
// unclean election is never needed while a leader exists; an unknown
// partition is said so.
func TestElectPreferredLeader(t *testing.T) {
	c := newCluster(t, 3, 43)
	c.waitReady()
	createTopic(t, c, 1, "el", 1, 3, nil)
	waitLeaders(t, c, "el", 1)
	p := c.nodes[1].r.partitionNamed("el", 0)
	pref := p.Replicas[0]
	if !c.runUntil(20*time.Second, func() bool { return leaderOf(c, "el", 0) == pref }) {
		t.Fatalf("el-0 never led by its preferred replica %d", pref)
	}
	if got := electCodes(c.request(1, electReq(0, 1000, "el", 0))); len(got) != 1 || got[0] != kerr.ElectionNotNeeded.Code {
		t.Fatalf("preferred election at the preferred leader: %v", got)
	}
	other, asker := p.Replicas[1], p.Replicas[2]
	c.nodes[pref].r.byName[topicPartition{"el", 0}].Replica().TransferLeader(uint64(other))
	if !c.runUntil(5*time.Second, func() bool { return leaderOf(c, "el", 0) == other }) {
		t.Fatalf("el-0 did not move to %d", other)
	}
	balancePeriod := time.Duration(balanceTicks) * c.nodes[1].r.cfg.TickInterval
	timeoutMs := int32(balancePeriod / 8 / time.Millisecond)
	start := c.clk.Monotonic()
	if got := electCodes(c.request(asker, electReq(0, timeoutMs, "el", 0))); len(got) != 1 || got[0] != 0 {
		t.Fatalf("preferred election asked of broker %d: %v, want success", asker, got)
	}
	if took := c.clk.Monotonic() - start; took > balancePeriod/8 {
		t.Fatalf("answered after %v, past its %dms timeout", took, timeoutMs)
	}
	// The asker saw the preferred replica lead; it serves once its read
	// lease is confirmed.
	if !c.runUntil(time.Second, func() bool { return leaderOf(c, "el", 0) == pref }) {
		t.Fatalf("after the election el-0 is led by %d, want %d", leaderOf(c, "el", 0), pref)
	}
	if got := electCodes(c.request(asker, electReq(1, 1000, "el", 0))); len(got) != 1 || got[0] != kerr.ElectionNotNeeded.Code {
		t.Fatalf("unclean election with a leader: %v", got)
	}
	if got := electCodes(c.request(asker, electReq(0, 1000, "el", 7))); len(got) != 1 || got[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %v", got)
	}
}
