package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Config describes a cluster to start.
type Config struct {
	// RunID names this run's containers, network and data directories and
	// is the value of their LabelKey label. Letters, digits and dashes.
	RunID string
	Nodes int    // brokers, numbered 1..Nodes
	Image string // built by BuildImage
	// KafkaPortBase is node 1's Kafka port on 127.0.0.1; node i gets
	// KafkaPortBase+i-1 (default 19092). AdminPortBase likewise for the
	// admin HTTP port (0: not published).
	KafkaPortBase int
	AdminPortBase int
	// DataRoot holds one data directory per node, bind-mounted at /data, so
	// data outlives kill -9 and restarts (default: a temporary directory).
	DataRoot string
	// Args returns the command line of node n (after the image's
	// entrypoint, /broker: the floe binary). Default: ServeArgs.
	Args func(c *Cluster, n int) []string
	// Env is extra environment for every node, NAME=value.
	Env []string
	// Mounts are extra docker -v specifications for every node
	// (Secure.Mount: the run's certificates).
	Mounts []string
	// Log receives every host command run.
	Log io.Writer
}

// Node is one broker container.
type Node struct {
	ID        int    // broker id, 1..Nodes
	Host      string // name on the private network: node<ID>
	Container string // container name
	KafkaAddr string // published 127.0.0.1:port, advertised to clients
	AdminAddr string // published admin HTTP address ("": not published)
	DataDir   string // host directory mounted at /data
}

// Cluster is a running set of broker containers. Its methods are safe for
// concurrent use (the nemesis and the harness's cleanup may overlap).
type Cluster struct {
	cfg     Config
	r       runner
	network string
	nodes   []*Node

	mu     sync.Mutex
	grudge map[int][]int // node -> nodes whose packets it drops (see Partition)
}

// New describes a cluster; Start creates it.
func New(cfg Config) (*Cluster, error) {
	if cfg.Nodes < 1 || cfg.RunID == "" || cfg.Image == "" {
		return nil, fmt.Errorf("cluster: need RunID, Image and Nodes >= 1")
	}
	if strings.Trim(cfg.RunID, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return nil, fmt.Errorf("cluster: run id %q: want lower-case letters, digits and dashes", cfg.RunID)
	}
	if cfg.KafkaPortBase == 0 {
		cfg.KafkaPortBase = 19092
	}
	if cfg.DataRoot == "" {
		cfg.DataRoot = filepath.Join(os.TempDir(), "floe-jepsen-"+cfg.RunID)
	}
	if cfg.Args == nil {
		cfg.Args = ServeArgs
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	c := &Cluster{cfg: cfg, r: execRunner{log: cfg.Log}, network: "jepsen-" + cfg.RunID, grudge: map[int][]int{}}
	for i := 1; i <= cfg.Nodes; i++ {
		c.nodes = append(c.nodes, c.describe(i))
	}
	return c, nil
}

func (c *Cluster) describe(i int) *Node {
	n := &Node{
		ID: i, Host: fmt.Sprintf("node%d", i),
		Container: fmt.Sprintf("jepsen-%s-node%d", c.cfg.RunID, i),
		KafkaAddr: fmt.Sprintf("127.0.0.1:%d", c.cfg.KafkaPortBase+i-1),
		DataDir:   filepath.Join(c.cfg.DataRoot, fmt.Sprintf("node%d", i)),
	}
	if c.cfg.AdminPortBase > 0 {
		n.AdminAddr = fmt.Sprintf("127.0.0.1:%d", c.cfg.AdminPortBase+i-1)
	}
	return n
}

// ServeArgs is the default command line: `floe serve` in cluster mode,
// listening on all interfaces inside the container, advertising the
// published loopback address to clients and node<N>:9093 to peers.
func ServeArgs(c *Cluster, n int) []string {
	node := c.Node(n)
	var peers []string
	for _, p := range c.Nodes() {
		if p.ID <= c.cfg.Nodes { // the initial voters only; added brokers join
			peers = append(peers, fmt.Sprintf("%d@%s:9093", p.ID, p.Host))
		}
	}
	return []string{"serve",
		"--node-id", strconv.Itoa(n), "--data-dir", "/data",
		"--kafka-addr", "0.0.0.0:9092", "--advertise-kafka-addr", node.KafkaAddr,
		"--admin-addr", "0.0.0.0:9644",
		"--raft-addr", "0.0.0.0:9093", "--advertise-raft-addr", node.Host + ":9093",
		"--peers", strings.Join(peers, ","),
	}
}

// Nodes returns every node, added ones included.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.nodes...)
}

// Node returns node id (1-based); nil if there is none.
func (c *Cluster) Node(id int) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < 1 || id > len(c.nodes) {
		return nil
	}
	return c.nodes[id-1]
}

// Network is the private network's name.
func (c *Cluster) Network() string { return c.network }

// KafkaAddrs returns every node's client address.
func (c *Cluster) KafkaAddrs() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.KafkaAddr)
	}
	return out
}

// Start creates the network and starts every node. It fails early, naming
// the port, if a port it would publish is taken.
func (c *Cluster) Start(ctx context.Context) error {
	for _, n := range c.Nodes() {
		for _, addr := range []string{n.KafkaAddr, n.AdminAddr} {
			if addr != "" && !portFree(addr) {
				return fmt.Errorf("cluster: %s is in use (choose another port base)", addr)
			}
		}
	}
	label := LabelKey + "=" + c.cfg.RunID
	if _, err := dockerRun(ctx, c.r, "network", "create", "--label", label, c.network); err != nil {
		return err
	}
	for _, n := range c.Nodes() {
		if err := c.runNode(ctx, n, c.cfg.Args); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) runNode(ctx context.Context, n *Node, argsOf func(*Cluster, int) []string) error {
	if err := os.MkdirAll(n.DataDir, 0o755); err != nil {
		return err
	}
	args := []string{"run", "-d", "--name", n.Container, "--hostname", n.Host,
		"--network", c.network, "--network-alias", n.Host,
		"--label", LabelKey + "=" + c.cfg.RunID,
		"-p", n.KafkaAddr + ":9092", "-v", n.DataDir + ":/data"}
	if n.AdminAddr != "" {
		args = append(args, "-p", n.AdminAddr+":9644")
	}
	for _, e := range c.cfg.Env {
		args = append(args, "-e", e)
	}
	for _, m := range c.cfg.Mounts {
		args = append(args, "-v", m)
	}
	args = append(args, c.cfg.Image)
	args = append(args, argsOf(c, n.ID)...)
	_, err := dockerRun(ctx, c.r, args...)
	return err
}

// AddNode starts one more broker, numbered Nodes()+1, with args (nil:
// Config.Args). It is the hook for membership nemeses: the new broker
// still has to be admitted by the cluster (for Floe: --join).
func (c *Cluster) AddNode(ctx context.Context, args func(c *Cluster, n int) []string) (*Node, error) {
	c.mu.Lock()
	n := c.describe(len(c.nodes) + 1)
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	if args == nil {
		args = c.cfg.Args
	}
	return n, c.runNode(ctx, n, args)
}

// Kill sends SIGKILL to node id's process (kill -9).
func (c *Cluster) Kill(ctx context.Context, id int) error {
	_, err := dockerRun(ctx, c.r, "kill", "-s", "KILL", c.Node(id).Container)
	return err
}

// Restart starts a killed or stopped node again, with the same data
// directory, and re-applies the partition in force (a restarted container
// gets a fresh network namespace).
func (c *Cluster) Restart(ctx context.Context, id int) error {
	if _, err := dockerRun(ctx, c.r, "start", c.Node(id).Container); err != nil {
		return err
	}
	return c.reapply(ctx)
}

// Pause freezes every process of node id (the cgroup freezer: like SIGSTOP,
// but the process cannot notice).
func (c *Cluster) Pause(ctx context.Context, id int) error {
	_, err := dockerRun(ctx, c.r, "pause", c.Node(id).Container)
	return err
}

// Resume thaws a paused node.
func (c *Cluster) Resume(ctx context.Context, id int) error {
	_, err := dockerRun(ctx, c.r, "unpause", c.Node(id).Container)
	return err
}

// State returns the container's state (running, paused, exited, ...).
func (c *Cluster) State(ctx context.Context, id int) (string, error) {
	return dockerRun(ctx, c.r, "inspect", "-f", "{{.State.Status}}", c.Node(id).Container)
}

// Exited returns the nodes whose container is not running or paused:
// crashed, or stopped by something other than the nemesis.
func (c *Cluster) Exited(ctx context.Context) ([]int, error) {
	var out []int
	for _, n := range c.Nodes() {
		st, err := c.State(ctx, n.ID)
		if err != nil {
			return out, err
		}
		if st != "running" && st != "paused" {
			out = append(out, n.ID)
		}
	}
	return out, nil
}

// PID returns the host pid of node id's process (0 if not running).
func (c *Cluster) PID(ctx context.Context, id int) (int, error) {
	out, err := dockerRun(ctx, c.r, "inspect", "-f", "{{.State.Pid}}", c.Node(id).Container)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// IP returns node id's address on the private network.
func (c *Cluster) IP(ctx context.Context, id int) (string, error) {
	f := fmt.Sprintf("{{with index .NetworkSettings.Networks %q}}{{.IPAddress}}{{end}}", c.network)
	return dockerRun(ctx, c.r, "inspect", "-f", f, c.Node(id).Container)
}

// Logs returns node id's output so far.
func (c *Cluster) Logs(ctx context.Context, id int) (string, error) {
	return c.r.run(ctx, "sh", "-c", fmt.Sprintf("docker logs %s 2>&1", c.Node(id).Container))
}

// SaveLogs writes node<ID>.log for every node into dir.
func (c *Cluster) SaveLogs(ctx context.Context, dir string) error {
	var first error
	for _, n := range c.Nodes() {
		out, err := c.Logs(ctx, n.ID)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, n.Host+".log"), []byte(out+"\n"), 0o644)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Exec runs a command inside node id's container (docker exec).
func (c *Cluster) Exec(ctx context.Context, id int, cmd ...string) (string, error) {
	return dockerRun(ctx, c.r, append([]string{"exec", c.Node(id).Container}, cmd...)...)
}

// Close removes the containers, the network and the data directories:
// whatever state the run is in. Safe to call more than once.
func (c *Cluster) Close(ctx context.Context) error {
	return Clean(ctx, c.cfg.Log, c.cfg.RunID, c.cfg.DataRoot)
}

// Clean removes every container and network labelled for runID (all runs
// if runID is empty), and dataRoot if given (for all runs: every
// floe-jepsen-* directory in the temporary directory).
func Clean(ctx context.Context, log io.Writer, runID, dataRoot string) error {
	r := execRunner{log: log}
	filter := "label=" + LabelKey
	if runID != "" {
		filter += "=" + runID
	}
	var errs []string
	if out, err := dockerRun(ctx, r, "ps", "-aq", "--filter", filter); err != nil {
		errs = append(errs, err.Error())
	} else if ids := lines(out); len(ids) > 0 {
		if _, err := dockerRun(ctx, r, append([]string{"rm", "-f", "-v"}, ids...)...); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if out, err := dockerRun(ctx, r, "network", "ls", "-q", "--filter", filter); err != nil {
		errs = append(errs, err.Error())
	} else if ids := lines(out); len(ids) > 0 {
		if _, err := dockerRun(ctx, r, append([]string{"network", "rm"}, ids...)...); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if runID == "" {
		if _, err := dockerRun(ctx, r, "image", "prune", "-f", "--filter", "label="+LabelKey+"=image"); err != nil {
			errs = append(errs, err.Error())
		}
	}
	dirs := []string{dataRoot}
	if runID == "" && dataRoot == "" {
		dirs, _ = filepath.Glob(filepath.Join(os.TempDir(), "floe-jepsen-*"))
	}
	for _, d := range dirs {
		if d != "" {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("clean: %s", strings.Join(errs, "; "))
	}
	return nil
}

// portFree reports whether addr can be listened on now.
func portFree(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// FreePortBase returns the first base, from start up in steps of 10, such
// that base..base+n-1 are all free on 127.0.0.1 (0 if none below 65000).
func FreePortBase(start, n int) int {
	for base := start; base+n < 65000; base += 10 {
		free := true
		for i := 0; i < n && free; i++ {
			free = portFree(fmt.Sprintf("127.0.0.1:%d", base+i))
		}
		if free {
			return base
		}
	}
	return 0
}
