package runtime

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/node"
)

// at returns the instant ms milliseconds after a fixed origin.
func at(ms float64) time.Time {
	return time.Unix(1000, 0).Add(time.Duration(ms * float64(time.Millisecond)))
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// TestProduceBreakdownTwoPartitions: a request for two partitions; the
// second one's commit ends last, so it is the critical one, and its wait
// splits at its fsync round.
func TestProduceBreakdownTwoPartitions(t *testing.T) {
	times := stageTimes{readAt: at(0), posted: at(0.5), started: at(2), answered: at(12), written: at(13)}
	stages := []node.TraceStage{
		{Name: node.StageValidate, Topic: "t", Partition: 0, Start: at(2), End: at(2.25)},
		{Name: node.StageAppend, Topic: "t", Partition: 0, Start: at(2.25), End: at(2.5)},
		{Name: node.StageFsync, Topic: "t", Partition: 0, Start: at(3), End: at(4)},
		{Name: node.StageQuorum, Topic: "t", Partition: 0, Start: at(2.5), End: at(4.5)},
		{Name: node.StageValidate, Topic: "t", Partition: 1, Start: at(2.5), End: at(2.75)},
		{Name: node.StageAppend, Topic: "t", Partition: 1, Start: at(2.75), End: at(3)},
		{Name: node.StageFsync, Topic: "t", Partition: 1, Start: at(5), End: at(7)},
		{Name: node.StageQuorum, Topic: "t", Partition: 1, Start: at(3), End: at(11)},
	}
	got := produceBreakdown(times, stages)
	want := map[int]time.Duration{
		iSocketRead: ms(0.5), iReactorWait: ms(1.5), iValidate: ms(0.5), iAppend: ms(0.5),
		iFsyncWait: ms(2), iFsync: ms(2), iReplication: ms(4),
		iReactorRest: ms(10 - 0.5 - 0.5 - 8), iResponse: ms(1), iTotal: ms(13),
	}
	for i, name := range produceStages {
		if !got.present[i] {
			t.Errorf("%s: missing", name)
			continue
		}
		if got.d[i] != want[i] {
			t.Errorf("%s = %v, want %v", name, got.d[i], want[i])
		}
	}
	// The commit stages add up to the critical partition's commit wait.
	if sum := got.d[iFsyncWait] + got.d[iFsync] + got.d[iReplication]; sum != ms(8) {
		t.Errorf("commit stages add up to %v, want 8ms", sum)
	}
}

// TestProduceBreakdownOpenRound: the followers made the entry a quorum's
// before the leader's own round ended (End zero at the answer): the round
// was not on the path, the whole wait is replication.
func TestProduceBreakdownOpenRound(t *testing.T) {
	times := stageTimes{posted: at(0), started: at(1), answered: at(6), written: at(6.5)}
	stages := []node.TraceStage{
		{Name: node.StageValidate, Topic: "t", Partition: 3, Start: at(1), End: at(1.5)},
		{Name: node.StageAppend, Topic: "t", Partition: 3, Start: at(1.5), End: at(2)},
		{Name: node.StageFsync, Topic: "t", Partition: 3, Start: at(4)},
		{Name: node.StageQuorum, Topic: "t", Partition: 3, Start: at(2), End: at(6)},
	}
	got := produceBreakdown(times, stages)
	if got.present[iSocketRead] {
		t.Errorf("socket_read present without a read time: %v", got.d[iSocketRead])
	}
	if got.d[iFsyncWait] != 0 || got.d[iFsync] != 0 || got.d[iReplication] != ms(4) {
		t.Errorf("fsync_wait %v fsync %v replication %v, want 0 0 4ms", got.d[iFsyncWait], got.d[iFsync], got.d[iReplication])
	}
	if got.d[iTotal] != ms(6.5) {
		t.Errorf("total = %v, want 6.5ms (from posted when the read time is unknown)", got.d[iTotal])
	}
}

// TestProduceBreakdownAcksOne: no commit wait, so no commit stages.
func TestProduceBreakdownAcksOne(t *testing.T) {
	times := stageTimes{readAt: at(0), posted: at(0), started: at(1), answered: at(2), written: at(3)}
	stages := []node.TraceStage{
		{Name: node.StageValidate, Topic: "t", Start: at(1), End: at(1.25)},
		{Name: node.StageAppend, Topic: "t", Start: at(1.25), End: at(1.5)},
	}
	got := produceBreakdown(times, stages)
	for _, i := range []int{iFsyncWait, iFsync, iReplication} {
		if got.present[i] {
			t.Errorf("%s present for acks=1: %v", produceStages[i], got.d[i])
		}
	}
	if got.d[iReactorRest] != ms(0.5) {
		t.Errorf("reactor_rest = %v, want 0.5ms", got.d[iReactorRest])
	}
}

// TestStageHistogramsObserveAndSample: observed stages land in their
// labelled series, absent ones are not observed, and sampling takes one
// request in every N.
func TestStageHistogramsObserveAndSample(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newStageHistograms(reg, 3)
	var d stageDurations
	d.set(iFsync, ms(2))
	d.set(iTotal, ms(5))
	h.observe(d)
	h.observe(d)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "floe_produce_stage_seconds" || len(mfs[0].GetMetric()) != len(produceStages) {
		t.Fatalf("gathered %v, want floe_produce_stage_seconds with one series per stage", mfs)
	}
	counts := map[string]uint64{}
	sums := map[string]float64{}
	for _, m := range mfs[0].GetMetric() {
		counts[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
		sums[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleSum()
	}
	for _, s := range produceStages {
		want := uint64(0)
		if s == stageFsync || s == stageTotal {
			want = 2
		}
		if counts[s] != want {
			t.Errorf("%s: %d observations, want %d", s, counts[s], want)
		}
	}
	if d := sums[stageFsync] - 0.004; d > 1e-9 || d < -1e-9 {
		t.Errorf("fsync sum %v, want 0.004", sums[stageFsync])
	}
	sampled := 0
	for range 30 {
		if h.sample() {
			sampled++
		}
	}
	if sampled != 10 {
		t.Errorf("sampled %d of 30 with every=3, want 10", sampled)
	}
	off := newStageHistograms(prometheus.NewRegistry(), 0)
	if off.sample() {
		t.Error("every=0 sampled a request")
	}
	if stageBuckets[0] != 0.00001 || stageBuckets[len(stageBuckets)-1] < 2 {
		t.Errorf("buckets span %v..%v s, want 10 µs to at least 2 s", stageBuckets[0], stageBuckets[len(stageBuckets)-1])
	}
}
