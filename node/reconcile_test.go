package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/logstore"
)

// TestReconcileWalksMetadataOncePerChange: a broker opening the replicas
// of a new topic of many partitions, two per round, and reporting their
// leaders as they are elected walks the metadata once per change that may
// move replicas (not once per round of opens, nor once per leader report),
// so the partitions it visits grow with the changes, not with the square
// of the partitions.
func TestReconcileWalksMetadataOncePerChange(t *testing.T) {
	const partitions = 64
	c := newCluster(t, 1, 21)
	c.waitReady()
	before, _ := c.nodes[1].r.Stats()
	createTopic(t, c, 1, "many", partitions, 1, nil)
	waitLeaders(t, c, "many", partitions)
	after, _ := c.nodes[1].r.Stats()
	changes := after.MetadataChanges - before.MetadataChanges
	walks := after.ReconcileWalks - before.ReconcileWalks
	visits := after.ReconcileVisits - before.ReconcileVisits
	t.Logf("changes %d, walks %d, visits %d, open rounds at least %d", changes, walks, visits, partitions/openBatchMax)
	if walks == 0 || walks > changes {
		t.Fatalf("%d walks of the metadata for %d changes", walks, changes)
	}
	total := uint64(0)
	for _, tp := range c.nodes[1].r.Metadata().Topics {
		total += uint64(len(tp.Partitions))
	}
	r := c.nodes[1].r
	cached := slices.Clone(r.groupIDs())
	r.groupsChanged()
	if rebuilt := r.groupIDs(); !slices.Equal(cached, rebuilt) {
		t.Fatalf("groupIDs kept while opening %v, rebuilt %v", cached, rebuilt)
	}
	if visits > walks*total {
		t.Fatalf("%d partitions visited in %d walks of %d partitions", visits, walks, total)
	}
	// Opening the topic takes partitions/openBatchMax rounds and each
	// partition's election a leader report; a walk per round or per
	// report would visit the topic that many times.
	if walks >= partitions/openBatchMax {
		t.Fatalf("%d walks for %d partitions opened %d per round: the rounds walk the metadata", walks, partitions, openBatchMax)
	}
}

// noDescriptorsFS fails opens and creates of files under the directories
// whose path holds match with logstore.ErrFileLimit, the first fails
// times, as OSFS does when the process is out of file descriptors.
type noDescriptorsFS struct {
	logstore.FS
	match string
	fails int
}

func (f *noDescriptorsFS) limited(name string) error {
	if f.fails > 0 && strings.Contains(name, f.match) {
		f.fails--
		return fmt.Errorf("open %s: too many open files (%w)", name, logstore.ErrFileLimit)
	}
	return nil
}

func (f *noDescriptorsFS) Create(name string) (logstore.File, error) {
	if err := f.limited(name); err != nil {
		return nil, err
	}
	return f.FS.Create(name)
}

func (f *noDescriptorsFS) Open(name string) (logstore.File, error) {
	if err := f.limited(name); err != nil {
		return nil, err
	}
	return f.FS.Open(name)
}

// TestOpenOutOfDescriptorsIsRetriedByTheBroker: a broker that runs out of
// file descriptors opening a partition's replica does not stop (nothing is
// lost: the log closed what it had opened); it tries again later, and
// every partition gets its leader once descriptors are back.
func TestOpenOutOfDescriptorsIsRetriedByTheBroker(t *testing.T) {
	c := newCluster(t, 1, 22)
	fsys := &noDescriptorsFS{match: "partitions/few-", fails: 3}
	c.wrapFS = func(id int32, inner logstore.FS) logstore.FS {
		fsys.FS = inner
		return fsys
	}
	c.nodes[1].boot() // the world booted it before wrapFS was set
	c.waitReady()
	createTopic(t, c, 1, "few", 4, 1, nil)
	waitLeaders(t, c, "few", 4)
	r := c.nodes[1].r
	st, _ := r.Stats()
	if r.Stopped() || st.OpenRetries == 0 || fsys.fails != 0 {
		t.Fatalf("stopped %v, open retries %d, opens still to fail %d", r.Stopped(), st.OpenRetries, fsys.fails)
	}
}

// TestReadyWaitsForEveryReplicaToOpen: a broker is not ready (/readyz)
// while a replica placed on it is not open yet, even when every replica
// already open has its leader. (A restart with 10,000 partitions answered
// /readyz with some 4,000 open: the broker opens them a few at a time, and
// the ones open were all led.) Here the replicas of one topic cannot open for
// want of file descriptors while another topic's are open and led.
func TestReadyWaitsForEveryReplicaToOpen(t *testing.T) {
	c := newCluster(t, 1, 23)
	fsys := &noDescriptorsFS{match: "partitions/late-"}
	c.wrapFS = func(id int32, inner logstore.FS) logstore.FS {
		fsys.FS = inner
		return fsys
	}
	c.nodes[1].boot() // the world booted it before wrapFS was set
	c.waitReady()
	createTopic(t, c, 1, "early", 4, 1, nil)
	waitLeaders(t, c, "early", 4)
	fsys.fails = 1 << 30 // out of descriptors for "late" until further notice
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "late", 2, 1
	req.Topics = append(req.Topics, rt)
	resp := c.request(1, req).(*kmsg.CreateTopicsResponse)
	// Created, but its partitions have no leader before the timeout.
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && err != kerr.RequestTimedOut {
		t.Fatalf("create late: %v", err)
	}
	c.runFor(5 * time.Second)
	r := c.nodes[1].r
	ready, why := r.Serving()
	if ready || !strings.Contains(why, "2 local replicas not open yet") {
		t.Fatalf("Serving with late's replicas unopened: %v %q", ready, why)
	}
	fsys.fails = 0
	waitLeaders(t, c, "late", 2)
	if !c.runUntil(5*time.Second, func() bool { ready, _ := r.Serving(); return ready }) {
		_, why := r.Serving()
		t.Fatalf("not ready once every replica opened: %q", why)
	}
}
