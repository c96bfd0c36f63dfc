package ui_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/runtime"
)

// raftPage is the part of /api/raft the cluster test reads.
type raftPage struct {
	Node          int32
	Controller    int32
	ControllerRep *raftLocalJSON
	Quorum        []struct {
		ID   uint64
		Lag  uint64
		Self bool
	}
	QuorumFrom int32
	Partitions []struct {
		Topic           string
		Partition       int32
		Leader          int32
		Epoch           int32
		Replicas        []int32
		Local           *raftLocalJSON
		LeaderElsewhere bool
		Problems        []string
		Quorum          []memberJSON
		QuorumFrom      int32
		QuorumErr       string
	}
}

// memberJSON is a member row as the leader's DescribeQuorum gives it.
type memberJSON struct {
	ID                        uint64
	Lag                       uint64
	Self, Behind              bool
	HeardAgoMs, CaughtUpAgoMs int64
}

type raftLocalJSON struct {
	Term, Lead uint64
	Role       string
	Voters     []uint64
	Rows       []memberJSON
}

// TestHTTPRaftCluster: on three brokers, each Raft page shows Metadata's
// leader and term for every partition, its own replica's Raft state with
// members' progress state where it leads, and for every partition the
// members' lag and ages as its leader reports them (DescribeQuorum, one
// request per leader broker). The controller group's members show on
// every page: locally on its leader, from the leader's DescribeQuorum
// elsewhere. With broker 3 stopped, broker 1's page shows member 3 behind
// both where broker 1 leads (its own view) and where broker 2 leads (2's
// answer).
func TestHTTPRaftCluster(t *testing.T) {
	const n = 3
	var peers []node.Peer
	kafka := make([]string, n)
	for i := range n {
		kafka[i] = freeAddr(t)
		peers = append(peers, node.Peer{ID: int32(i + 1), RaftAddr: freeAddr(t)})
	}
	bs := make([]*testBroker, n)
	stops := make([]func(), n)
	for i := range n {
		host, port, _ := net.SplitHostPort(kafka[i])
		p, _ := strconv.Atoi(port)
		opts := runtime.Options{DataDir: t.TempDir(), KafkaAddr: kafka[i], AdminAddr: "127.0.0.1:0", RaftAddr: peers[i].RaftAddr, Logger: quietLogger(),
			Node: node.Config{NodeID: int32(i + 1), KafkaHost: host, KafkaPort: int32(p), RaftAddr: peers[i].RaftAddr, Peers: peers,
				Groups: group.Config{InitialRebalanceDelay: -1, SessionTimeoutMin: time.Second}}}
		b, err := runtime.Start(opts)
		if err != nil {
			t.Fatalf("start broker %d: %v", i+1, err)
		}
		var once sync.Once
		stops[i] = func() {
			once.Do(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = b.Shutdown(ctx)
			})
		}
		t.Cleanup(stops[i])
		bs[i] = &testBroker{Broker: b, kafka: kafka[i]}
	}
	for _, b := range bs {
		waitReady(t, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	adm := kadm.NewClient(bs[0].client(t, "", ""))
	for {
		res, err := adm.CreateTopic(ctx, 3, 3, nil, "r3")
		if err == nil && res.Err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create r3: %v %v", err, res.Err)
		}
		time.Sleep(200 * time.Millisecond) // the brokers register with the controller
	}

	leaders := map[int32]bool{}
	for _, b := range bs {
		br := newBrowser(t, b.ui())
		deadline := time.Now().Add(waitTimeout)
		for {
			var d raftPage
			code, _, body := br.do(http.MethodGet, "/api/raft?topic=r3", nil, nil)
			if code != http.StatusOK || json.Unmarshal([]byte(body), &d) != nil {
				t.Fatalf("broker at %s /api/raft: %d %s", b.kafka, code, body)
			}
			why := raftClusterCheck(d)
			if why == "" {
				if d.ControllerRep != nil && len(d.ControllerRep.Rows) == n {
					leaders[-1] = true // this broker leads the controller
				}
				for _, p := range d.Partitions {
					leaders[p.Leader] = true
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %d: %s\n%s", d.Node, why, body)
			}
			time.Sleep(200 * time.Millisecond) // elections and catch-up
		}
	}
	if !leaders[-1] {
		t.Fatalf("no broker's page showed the controller's members")
	}

	// Broker 3 stops (handing its leaderships over first); records go to
	// every partition. Broker 1's page shows member 3 behind and flags the
	// partition: from its own Raft view where broker 1 leads, from broker
	// 2's DescribeQuorum answer where broker 2 leads.
	stops[2]()
	pctx, pcancel := context.WithTimeout(context.Background(), waitTimeout) // the first phase may have used up ctx
	defer pcancel()
	br := newBrowser(t, bs[0].ui())
	clients := []*kgo.Client{bs[0].client(t, "", "", kgo.RecordPartitioner(kgo.ManualPartitioner())),
		bs[1].client(t, "", "", kgo.RecordPartitioner(kgo.ManualPartitioner()))}
	deadline := time.Now().Add(waitTimeout)
	for {
		var d raftPage
		code, _, body := br.do(http.MethodGet, "/api/raft?topic=r3", nil, nil)
		if code != http.StatusOK || json.Unmarshal([]byte(body), &d) != nil {
			t.Fatalf("broker 1 /api/raft with broker 3 down: %d %s", code, body)
		}
		led1, elsewhere := false, true
		for _, p := range d.Partitions {
			if p.Leader == 1 || p.Leader == 2 {
				// The test clients dial their own broker only: each
				// partition's records go through its leader's.
				_ = clients[p.Leader-1].ProduceSync(pctx, &kgo.Record{Topic: "r3", Partition: p.Partition, Value: []byte("x")}).FirstErr()
			}
			behind := strings.Contains(strings.Join(p.Problems, ";"), "member 3 behind")
			switch {
			case p.Leader == 1 && p.Local != nil:
				for _, m := range p.Local.Rows {
					if m.ID == 3 && m.Lag > 0 && behind {
						led1 = true
					}
				}
			case p.Leader == 2:
				// Broker 2's own answer, on broker 1's page.
				ok := false
				for _, m := range p.Quorum {
					if m.ID == 3 && m.Lag > 0 && m.Behind && p.QuorumFrom == 2 && behind {
						ok = true
					}
				}
				elsewhere = elsewhere && ok
			}
		}
		if led1 && elsewhere {
			// The HTML page says the same: where broker 2 leads, its
			// answer with member 3's ages.
			_, html := br.get("/raft?topic=r3")
			for _, p := range d.Partitions {
				t.Logf("r3/%d led by %d: problems %q", p.Partition, p.Leader, p.Problems)
				if p.Leader == 2 && (!strings.Contains(html, "As leader broker 2 reports them") || !strings.Contains(html, "caught up ")) {
					t.Fatalf("the HTML page does not show broker 2's answer:\n%s", between(html, `id="raft-table"`, "</table>"))
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker 1 never showed member 3 behind where it leads and where broker 2 leads:\n%s", body)
		}
		time.Sleep(200 * time.Millisecond) // the leaders notice the silence (an election timeout; 5 s for DescribeQuorum's view)
	}
}

// raftClusterCheck says what is not yet as it should be on one page.
func raftClusterCheck(d raftPage) string {
	if d.ControllerRep == nil || len(d.ControllerRep.Rows) == 0 {
		// Not the controller's leader: its members come from the leader's
		// DescribeQuorum.
		if len(d.Quorum) != 3 || d.QuorumFrom != d.Controller {
			return "the controller's members not shown from its leader"
		}
		self := 0
		for _, m := range d.Quorum {
			if m.Self {
				self++
			}
			if m.Lag != 0 {
				return "a controller member behind"
			}
		}
		if self != 1 {
			return "the controller's members without one leader"
		}
	}
	if len(d.Partitions) != 3 {
		return "want 3 partitions"
	}
	for _, p := range d.Partitions {
		if why := quorumCheck(p.Quorum, p.QuorumFrom, p.QuorumErr, p.Leader); why != "" {
			return why
		}
		switch {
		case p.Leader < 1 || p.Epoch < 1 || len(p.Replicas) != 3:
			return "partition without a leader, a term or three replicas"
		case p.Local == nil || len(p.Local.Voters) != 3:
			return "no local replica with three voters"
		case p.Leader == d.Node:
			if p.Local.Role != "StateLeader" || uint64(p.Epoch) != p.Local.Term || len(p.Local.Rows) != 3 || p.LeaderElsewhere {
				return "a partition led here without its three members"
			}
			for _, m := range p.Local.Rows {
				if m.Lag != 0 {
					return "a member behind"
				}
				if !m.Self && (m.HeardAgoMs < 0 || m.CaughtUpAgoMs < 0) {
					return "a member of a partition led here without the leader's ages"
				}
			}
		default:
			if p.Local.Role == "StateLeader" || p.Local.Lead != uint64(p.Leader) || len(p.Local.Rows) != 0 || !p.LeaderElsewhere {
				return "a partition led elsewhere shown with members, or another leader"
			}
		}
	}
	return ""
}

// quorumCheck says what is wrong with a partition's members as its leader
// reported them: all three, none behind, heard from, from the leader.
func quorumCheck(q []memberJSON, from int32, qerr string, leader int32) string {
	if qerr != "" {
		return "DescribeQuorum: " + qerr
	}
	if len(q) != 3 || from != leader {
		return "a partition without its three members from its leader"
	}
	for _, m := range q {
		if m.Lag != 0 || m.Behind || m.HeardAgoMs < 0 || m.CaughtUpAgoMs < 0 {
			return "a partition's member behind or not heard from"
		}
	}
	return ""
}
