package nemesis

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"sync"
	"time"

	"github.com/floe-broker/floe/jepsen/cluster"
	"github.com/floe-broker/floe/jepsen/history"
)

// Kind is a fault.
type Kind string

const (
	Kill            Kind = "kill"
	Pause           Kind = "pause"
	PartitionOne    Kind = "partition-one"
	PartitionHalf   Kind = "partition-half"
	PartitionBridge Kind = "partition-bridge"
	Membership      Kind = "membership"
)

// Target is whom a fault aims at.
type Target string

const (
	Any        Target = "any"
	Leader     Target = "leader"
	Controller Target = "controller"
	// Coordinator: the transaction coordinator of one of the transactional
	// producers (Config.Coordinators).
	Coordinator Target = "coordinator"
)

// AllKinds are the kinds that need no hook.
var AllKinds = []Kind{Kill, Pause, PartitionOne, PartitionHalf, PartitionBridge}

// Faults is what the nemesis needs from a cluster; *cluster.Cluster has it.
type Faults interface {
	Kill(ctx context.Context, id int) error
	Restart(ctx context.Context, id int) error
	Pause(ctx context.Context, id int) error
	Resume(ctx context.Context, id int) error
	Partition(ctx context.Context, g cluster.Grudge) error
	Heal(ctx context.Context) error
	Nodes() []*cluster.Node
}

// Topology answers who leads: the controller and each partition's leader
// (broker ids), as workload.Workload.Topology does.
type Topology func(ctx context.Context) (controller int32, leaders []int32, err error)

// MembershipHook adds or removes a broker (not built in Floe yet).
type MembershipHook interface {
	Add(ctx context.Context) (id int, err error)
	Remove(ctx context.Context, id int) error
}

// Config is the schedule.
type Config struct {
	Kinds   []Kind
	Targets []Target
	// Interval is the quiet time between faults, Window how long each
	// fault lasts before it is healed.
	Interval, Window time.Duration
	Seed             int64
	Membership       MembershipHook
	// Coordinators finds the transaction coordinators, for the
	// coordinator target (workload.Workload.Coordinators).
	Coordinators func(ctx context.Context) ([]int32, error)
	Log          io.Writer
}

// Event is one fault in the timeline. Times are nanoseconds on the
// history's clock.
type Event struct {
	Kind   Kind   `json:"kind"`
	Target Target `json:"target"`
	Nodes  []int  `json:"nodes"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"` // 0 while the fault lasts
	Note   string `json:"note,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Nemesis runs the schedule.
type Nemesis struct {
	cfg   Config
	f     Faults
	topo  Topology
	rec   *history.Recorder
	now   func() int64
	rnd   *rand.Rand
	mu    sync.Mutex
	time  []Event
	heals []func(context.Context) error // undo of the faults in force
}

// New checks the configuration.
func New(cfg Config, f Faults, topo Topology, rec *history.Recorder, now func() int64) (*Nemesis, error) {
	if len(cfg.Kinds) == 0 {
		return nil, fmt.Errorf("nemesis: no kinds")
	}
	for _, k := range cfg.Kinds {
		switch k {
		case Kill, Pause, PartitionOne, PartitionHalf, PartitionBridge:
		case Membership:
			if cfg.Membership == nil {
				return nil, fmt.Errorf("nemesis: %s needs a membership hook; Floe cannot add or remove brokers yet", k)
			}
		default:
			return nil, fmt.Errorf("nemesis: unknown kind %q", k)
		}
	}
	if len(cfg.Targets) == 0 {
		cfg.Targets = []Target{Any}
	}
	for _, t := range cfg.Targets {
		if t != Any && t != Leader && t != Controller && t != Coordinator {
			return nil, fmt.Errorf("nemesis: unknown target %q", t)
		}
		if t == Coordinator && cfg.Coordinators == nil {
			return nil, fmt.Errorf("nemesis: target %s needs the transactional workload", t)
		}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return &Nemesis{cfg: cfg, f: f, topo: topo, rec: rec, now: now, rnd: rand.New(rand.NewSource(cfg.Seed))}, nil
}

// Run injects faults until ctx ends: quiet for Interval, one fault for
// Window, heal, again. It heals what it did before returning.
func (n *Nemesis) Run(ctx context.Context) {
	defer n.HealAll(context.WithoutCancel(ctx))
	for sleep(ctx, n.cfg.Interval) == nil {
		n.inject(ctx)
		_ = sleep(ctx, n.cfg.Window)
		n.HealAll(context.WithoutCancel(ctx))
	}
}

// Timeline returns the faults so far, in order.
func (n *Nemesis) Timeline() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Event(nil), n.time...)
}

func (n *Nemesis) inject(ctx context.Context) {
	kind := n.cfg.Kinds[n.rnd.Intn(len(n.cfg.Kinds))]
	target := n.cfg.Targets[n.rnd.Intn(len(n.cfg.Targets))]
	victim, note := n.pick(ctx, target)
	ev := Event{Kind: kind, Target: target, Start: n.now(), Note: note}
	nodes, heal, err := n.apply(ctx, kind, victim)
	ev.Nodes = nodes
	if err != nil {
		ev.Error = err.Error()
	}
	n.mu.Lock()
	n.time = append(n.time, ev)
	idx := len(n.time) - 1
	n.heals = append(n.heals, func(ctx context.Context) error {
		herr := heal(ctx)
		n.mu.Lock()
		n.time[idx].End = n.now()
		if herr != nil {
			n.time[idx].Error += " heal: " + herr.Error()
		}
		n.mu.Unlock()
		n.log(fmt.Sprintf("heal %s %v", kind, nodes), herr)
		return herr
	})
	n.mu.Unlock()
	n.log(fmt.Sprintf("%s %v (target %s %s)", kind, nodes, target, note), err)
}

func (n *Nemesis) log(what string, err error) {
	op := history.Op{Process: -1, Type: history.Info, F: history.Nemesis, Note: what}
	if err != nil {
		op.Error = err.Error()
	}
	if n.rec != nil {
		n.rec.Add(op)
	}
	fmt.Fprintf(n.cfg.Log, "nemesis: %s %v\n", what, errString(err))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// HealAll undoes every fault in force: restarts killed nodes, resumes
// paused ones, removes partitions.
func (n *Nemesis) HealAll(ctx context.Context) {
	n.mu.Lock()
	heals := n.heals
	n.heals = nil
	n.mu.Unlock()
	for i := len(heals) - 1; i >= 0; i-- {
		_ = heals[i](ctx)
	}
}

// pick chooses the victim node for a target. A leader or controller that
// cannot be found falls back to a random node, and the note says so.
func (n *Nemesis) pick(ctx context.Context, t Target) (int, string) {
	ids := n.ids()
	random := ids[n.rnd.Intn(len(ids))]
	if t == Coordinator {
		return n.pickCoordinator(ctx, ids, random)
	}
	if t == Any || n.topo == nil {
		return random, ""
	}
	controller, leaders, err := n.topo(ctx)
	if err != nil {
		return random, "topology unknown: " + err.Error()
	}
	chosen := int32(-1)
	switch {
	case t == Controller:
		chosen = controller
	case t == Leader && len(leaders) > 0:
		chosen = leaders[n.rnd.Intn(len(leaders))]
	}
	for _, id := range ids {
		if int32(id) == chosen {
			return id, fmt.Sprintf("%s %d", t, chosen)
		}
	}
	return random, fmt.Sprintf("no %s among the nodes (got %d)", t, chosen)
}

// pickCoordinator picks one of the transaction coordinators.
func (n *Nemesis) pickCoordinator(ctx context.Context, ids []int, random int) (int, string) {
	coords, err := n.cfg.Coordinators(ctx)
	if err != nil || len(coords) == 0 {
		return random, fmt.Sprintf("coordinator unknown: %v", err)
	}
	chosen := coords[n.rnd.Intn(len(coords))]
	for _, id := range ids {
		if int32(id) == chosen {
			return id, fmt.Sprintf("coordinator %d", chosen)
		}
	}
	return random, fmt.Sprintf("no coordinator among the nodes (got %d)", chosen)
}

func (n *Nemesis) ids() []int {
	var ids []int
	for _, node := range n.f.Nodes() {
		ids = append(ids, node.ID)
	}
	sort.Ints(ids)
	return ids
}

// apply injects one fault on victim and returns the nodes it hit and how
// to undo it.
func (n *Nemesis) apply(ctx context.Context, kind Kind, victim int) ([]int, func(context.Context) error, error) {
	switch kind {
	case Kill:
		return []int{victim}, func(ctx context.Context) error { return n.f.Restart(ctx, victim) }, n.f.Kill(ctx, victim)
	case Pause:
		return []int{victim}, func(ctx context.Context) error { return n.f.Resume(ctx, victim) }, n.f.Pause(ctx, victim)
	case Membership:
		return n.membership(ctx, victim)
	}
	groups := Groups(kind, n.ids(), victim, n.rnd)
	heal := func(ctx context.Context) error { return n.f.Heal(ctx) }
	if err := n.f.Partition(ctx, cluster.Components(n.ids(), groups...)); err != nil {
		return groups[0], heal, err
	}
	return groups[0], heal, nil
}

func (n *Nemesis) membership(ctx context.Context, victim int) ([]int, func(context.Context) error, error) {
	if n.rnd.Intn(2) == 0 {
		id, err := n.cfg.Membership.Add(ctx)
		return []int{id}, func(context.Context) error { return nil }, err
	}
	return []int{victim}, func(context.Context) error { return nil }, n.cfg.Membership.Remove(ctx, victim)
}

// Groups returns the components of a partition kind over ids, the victim's
// component first.
func Groups(kind Kind, ids []int, victim int, rnd *rand.Rand) [][]int {
	others := make([]int, 0, len(ids))
	for _, id := range ids {
		if id != victim {
			others = append(others, id)
		}
	}
	rnd.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	minority := max(1, (len(ids)-1)/2) // the victim's side, victim included
	switch kind {
	case PartitionOne:
		return [][]int{{victim}, sorted(others)}
	case PartitionHalf:
		return [][]int{sorted(append([]int{victim}, others[:minority-1]...)), sorted(others[minority-1:])}
	default: // PartitionBridge: the last of the others is the bridge
		if len(others) < 2 {
			return [][]int{{victim}, sorted(others)}
		}
		bridge := others[len(others)-1]
		rest := others[:len(others)-1]
		small := max(0, minority-1)
		return [][]int{sorted(append([]int{victim, bridge}, rest[:small]...)), sorted(append([]int{bridge}, rest[small:]...))}
	}
}

func sorted(s []int) []int {
	out := append([]int(nil), s...)
	sort.Ints(out)
	return out
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
