package group

import (
	"encoding/hex"
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Client identifies the connection a request came from; DescribeGroups
// shows it for each member.
type Client struct {
	ID   string // the request header's client id
	Host string // the client's address, without port
	// Principal is the authenticated principal while the broker
	// authorizes ("" otherwise): a KIP-848 member's regex subscription
	// matches only the topics it may DESCRIBE (Env.MayDescribe).
	Principal string
}

// Coordinator serves the groups of one __consumer_offsets partition while
// its node leads that partition.
//
// Lifecycle: New, then Replay for every committed record of the partition
// in log order, then Start; serve requests; Close when leadership is lost.
// After Close every parked request has been answered with NOT_COORDINATOR
// and timers do nothing; writes still in flight answer their requests when
// the log says what became of them.
//
// Invariant: groups holds no Dead group (a deleted group leaves the map at
// once, its record tombstones follow).
type Coordinator struct {
	cfg     Config
	env     Env
	groups  map[string]*group
	started bool
	closed  bool
	// token distinguishes timers of the same kind (a pending member id
	// handed out twice, a member's successive session timers).
	token uint64
	// txnPending holds transactional offsets until their marker (txn.go).
	txnPending map[int64]txnOffsets
}

// New returns a coordinator with no groups.
func New(cfg Config, env Env) *Coordinator {
	return &Coordinator{cfg: cfg.WithDefaults(), env: env, groups: map[string]*group{}}
}

// Start ends the replay: every loaded member's session timer starts now,
// so a member that moved with its coordinator keeps its place if it
// heartbeats within its session timeout.
func (c *Coordinator) Start(now time.Duration) {
	if c.started {
		return
	}
	c.started = true
	c.startConsumers(now)
	for _, name := range c.groupNames() {
		g := c.groups[name]
		g.subscribed = g.computeSubscribed()
		for _, m := range g.members {
			m.isNew = false
			c.touch(g, m, now, m.session)
		}
	}
}

// Close stops the coordinator (its node lost leadership of the partition):
// every parked JoinGroup and SyncGroup is answered NOT_COORDINATOR.
func (c *Coordinator) Close() {
	if c.closed {
		return
	}
	c.closed = true
	code := kerr.NotCoordinator.Code
	for _, name := range c.groupNames() {
		g := c.groups[name]
		for _, m := range g.members {
			g.answerJoin(m, joinResult{code: code, memberID: m.id, generation: -1})
			answerSync(m, code, nil)
		}
	}
}

// Closed reports whether Close was called.
func (c *Coordinator) Closed() bool { return c.closed }

// RebalanceTimeout returns a group's rebalance timeout (the largest its
// members asked for), or 0 for a group it does not hold: how long a
// JoinGroup or SyncGroup of the group may wait by design.
func (c *Coordinator) RebalanceTimeout(name string) time.Duration {
	if g := c.groups[name]; g != nil {
		return g.rebalanceTimeout()
	}
	return 0
}

// groupNames returns the group names, sorted.
func (c *Coordinator) groupNames() []string {
	names := make([]string, 0, len(c.groups))
	for n := range c.groups { //floe:unordered sorted below
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (c *Coordinator) wallMillis() int64 {
	if c.env.WallMillis == nil {
		return 0
	}
	return c.env.WallMillis()
}

// newMemberID makes a member id the way Kafka does: the client id (or the
// static instance id) and a random UUID.
func (c *Coordinator) newMemberID(prefix string) string {
	var b [16]byte
	for i := 0; i < len(b); i += 8 {
		v := c.env.Rand.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (c *Coordinator) nextToken() uint64 {
	c.token++
	return c.token
}

// touch records a sign of life from m: its session deadline moves to
// now+timeout. One timer per member is outstanding; a new one is armed
// only when the deadline moves earlier than the armed one.
func (c *Coordinator) touch(g *group, m *member, now, timeout time.Duration) {
	m.deadline = now + timeout
	if m.timerArmed && m.deadline >= m.timerAt {
		return
	}
	c.armSession(g, m, now, timeout)
}

func (c *Coordinator) armSession(g *group, m *member, now, d time.Duration) {
	tok := c.nextToken()
	m.timerArmed, m.timerToken, m.timerAt = true, tok, now+d
	c.env.Timers.After(d, func(now time.Duration) { c.sessionTimer(g, m, tok, now) })
}

// sessionTimer runs when a member's session timer fires. A member awaiting
// a JoinGroup or SyncGroup answer is alive by definition (its timer is
// re-armed when it is answered), except a new member, which may wait only
// NewMemberJoinTimeout.
func (c *Coordinator) sessionTimer(g *group, m *member, tok uint64, now time.Duration) {
	if c.closed || m.gone || tok != m.timerToken {
		return
	}
	m.timerArmed = false
	if now < m.deadline {
		c.armSession(g, m, now, m.deadline-now)
		return
	}
	if !m.isNew && (m.joinWaiter != nil || m.syncWaiter != nil) {
		return
	}
	c.removeMember(g, m, now)
}

// storeErrorCode maps a log write error to what a group request is told,
// as Kafka's coordinator maps them: the partition moved or is unwritable
// → NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (the client looks for
// the coordinator again); a batch too big → tooLarge.
func storeErrorCode(err error, tooLarge *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError.Code
	}
	switch ke {
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.NotCoordinator:
		return kerr.NotCoordinator.Code
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend,
		kerr.RequestTimedOut, kerr.CoordinatorNotAvailable:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return tooLarge.Code
	}
	return ke.Code
}
