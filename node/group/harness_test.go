package group

import (
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/coord/coordtest"
)

// fakeLog is __consumer_offsets as the coordinator sees it (coordtest.Log).
type fakeLog = coordtest.Log

// harness drives one coordinator with a fake clock, timers and log.
type harness struct {
	t      *testing.T
	now    time.Duration
	timers *coordtest.Timers
	log    *fakeLog
	cfg    Config
	c      *Coordinator
	known  map[string]int32 // topic → partitions; nil: everything exists
	topics []TopicInfo      // what consumer groups may subscribe to
	rand   *rand.Rand       // shared across failovers, as the node's is
	// timeouts are consumer groups' own timeouts (their group configs)
	timeouts map[string]ConsumerTimeouts
}

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, cfg: cfg, rand: rand.New(rand.NewSource(1))}
	h.timers = &coordtest.Timers{Now: &h.now}
	h.log = &fakeLog{Now: &h.now}
	h.c = New(cfg, h.env())
	h.c.Start(h.now)
	return h
}

func (h *harness) env() Env {
	return Env{
		Log: h.log, Timers: h.timers, Rand: h.rand,
		WallMillis: func() int64 { return 1_700_000_000_000 + int64(h.now/time.Millisecond) },
		Known: func(topic string, p int32) bool {
			if h.known == nil {
				return true
			}
			n, ok := h.known[topic]
			return ok && p >= 0 && p < n
		},
		Topics:           func() []TopicInfo { return h.topics },
		ConsumerTimeouts: func(group string) ConsumerTimeouts { return h.timeouts[group] },
	}
}

// advance moves the clock forward by d, firing due timers in order.
func (h *harness) advance(d time.Duration) { h.timers.Advance(d) }

// failover replaces the coordinator with a new one rebuilt from the
// committed records, as a new leader of the partition would.
func (h *harness) failover() {
	h.c.Close()
	h.timers.Clear()
	h.c = New(h.cfg, h.env())
	for _, r := range h.log.Committed {
		// The node replays from read buffers it does not keep: a
		// coordinator that kept slices of them would pin the log's chunks
		// in memory. Here each record lives in a buffer scribbled over
		// after its replay, so kept slices show up as changed state.
		buf := append(append([]byte(nil), r.Key...), r.Value...)
		key, value := buf[:len(r.Key)], buf[len(r.Key):]
		if r.Value == nil {
			value = nil
		}
		if err := h.c.Replay(key, value); err != nil {
			h.t.Fatalf("replay: %v", err)
		}
		for i := range buf {
			buf[i] = 0xa5
		}
	}
	h.c.Start(h.now)
}

// reply captures the one answer a request must get.
type reply[T any] struct {
	t     *testing.T
	n     int
	resp  *T
	label string
}

func (r *reply[T]) set(resp *T) {
	r.n++
	if r.n > 1 {
		r.t.Errorf("%s answered %d times", r.label, r.n)
	}
	r.resp = resp
}

func (r *reply[T]) must() *T {
	r.t.Helper()
	if r.n == 0 {
		r.t.Fatalf("%s not answered", r.label)
	}
	return r.resp
}

func (r *reply[T]) parked() bool { return r.n == 0 }

// joinSpec is one JoinGroup.
type joinSpec struct {
	group     string
	member    string
	instance  string
	client    string
	version   int16
	session   time.Duration
	rebalance time.Duration
	protocols []string // names; metadata is consumerMeta(topics)
	topics    []string
}

func (h *harness) join(s joinSpec) *reply[kmsg.JoinGroupResponse] {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = s.version
	if req.Version == 0 {
		req.Version = 9 // the default; build v0 requests by hand
	}
	req.Group, req.MemberID, req.ProtocolType = s.group, s.member, "consumer"
	req.SessionTimeoutMillis = int32(orDur(s.session, 10*time.Second) / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(orDur(s.rebalance, 20*time.Second) / time.Millisecond)
	if s.instance != "" {
		inst := s.instance
		req.InstanceID = &inst
	}
	protos := s.protocols
	if len(protos) == 0 {
		protos = []string{"range"}
	}
	topics := s.topics
	if topics == nil {
		topics = []string{"t"}
	}
	for _, p := range protos {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name, jp.Metadata = p, consumerMeta(topics)
		req.Protocols = append(req.Protocols, jp)
	}
	r := &reply[kmsg.JoinGroupResponse]{t: h.t, label: "join " + s.member + s.instance}
	client := s.client
	if client == "" {
		client = "c"
	}
	h.c.JoinGroup(h.now, Client{ID: client, Host: "/127.0.0.1"}, req, r.set)
	return r
}

func orDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func consumerMeta(topics []string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 1
	m.Topics = topics
	return m.AppendTo(nil)
}

// joinNew performs the KIP-394 dance for a new dynamic member: the first
// join gets MEMBER_ID_REQUIRED and an id; the second join parks.
func (h *harness) joinNew(group string) (string, *reply[kmsg.JoinGroupResponse]) {
	h.t.Helper()
	first := h.join(joinSpec{group: group}).must()
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		h.t.Fatalf("first join: code %d id %q, want MEMBER_ID_REQUIRED with an id", first.ErrorCode, first.MemberID)
	}
	return first.MemberID, h.join(joinSpec{group: group, member: first.MemberID})
}

func (h *harness) sync(group, member string, gen int32, assign map[string]string) *reply[kmsg.SyncGroupResponse] {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, member, gen
	for _, id := range sortedMapKeys(assign) {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, []byte(assign[id])
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	r := &reply[kmsg.SyncGroupResponse]{t: h.t, label: "sync " + member}
	h.c.SyncGroup(h.now, req, r.set)
	return r
}

func (h *harness) heartbeat(group, member string, gen int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = group, member, gen
	return h.c.Heartbeat(h.now, req).ErrorCode
}

func (h *harness) commit(group, member string, gen int32, topic string, partition int32, offset int64) *reply[kmsg.OffsetCommitResponse] {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r := &reply[kmsg.OffsetCommitResponse]{t: h.t, label: "commit"}
	h.c.OffsetCommit(h.now, req, r.set)
	return r
}

func commitCode(resp *kmsg.OffsetCommitResponse) int16 { return resp.Topics[0].Partitions[0].ErrorCode }

// fetch returns the committed offset of one partition (and its error).
func (h *harness) fetch(group, topic string, partition int32, requireStable bool) (int64, int16) {
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	g := h.c.FetchOffsets(group, []kmsg.OffsetFetchRequestGroupTopic{rt}, requireStable)
	p := g.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// state returns a group's state name.
func (h *harness) state(group string) string {
	s, _ := h.c.GroupState(group)
	return s.String()
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}
