package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
)

// Grudge says, for each node, the nodes whose packets it drops. Partitions
// are symmetric grudges; an asymmetric one models a one-way link failure.
type Grudge map[int][]int

// Components returns the grudge that cuts the network into the given
// groups: nodes talk only to nodes that share a group with them. Groups may
// overlap (a bridge node in two groups talks to both). Nodes in no group are
// cut off from everyone.
func Components(all []int, groups ...[]int) Grudge {
	talks := map[[2]int]bool{}
	for _, g := range groups {
		for _, a := range g {
			for _, b := range g {
				talks[[2]int{a, b}] = true
			}
		}
	}
	gr := Grudge{}
	for _, a := range all {
		for _, b := range all {
			if a != b && !talks[[2]int{a, b}] {
				gr[a] = append(gr[a], b)
			}
		}
	}
	return gr
}

// IptablesAvailable reports whether the host has iptables and nsenter,
// which Partition needs.
func IptablesAvailable() error {
	for _, tool := range []string{"iptables", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (apt-get install iptables util-linux): %w", tool, err)
		}
	}
	return nil
}

// Partition heals any partition in force, then makes each node drop
// packets from the nodes its grudge names: an iptables DROP rule on INPUT
// inside the node's network namespace, run from the host through nsenter
// (the image has no tools). Only peer addresses are dropped: the host's
// clients still reach every node through its published port.
func (c *Cluster) Partition(ctx context.Context, g Grudge) error {
	if err := c.Heal(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.grudge = g
	c.mu.Unlock()
	return c.reapply(ctx)
}

// Heal removes every partition rule.
func (c *Cluster) Heal(ctx context.Context) error {
	c.mu.Lock()
	c.grudge = Grudge{}
	c.mu.Unlock()
	var first error
	for _, n := range c.Nodes() {
		if err := c.iptables(ctx, n.ID, "-F", "INPUT"); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// reapply installs the grudge in force on every running node (rules are
// idempotent: -C checks before -A appends).
func (c *Cluster) reapply(ctx context.Context) error {
	c.mu.Lock()
	g := c.grudge
	c.mu.Unlock()
	ids := make([]int, 0, len(g))
	for id := range g {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		for _, from := range g[id] {
			ip, err := c.IP(ctx, from)
			if err != nil || ip == "" {
				continue // not running: its new address is blocked when it restarts
			}
			rule := []string{"INPUT", "-s", ip, "-j", "DROP"}
			if c.iptables(ctx, id, append([]string{"-C"}, rule...)...) == nil {
				continue
			}
			if err := c.iptables(ctx, id, append([]string{"-A"}, rule...)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// iptables runs iptables inside node id's network namespace. A node that
// is not running has no namespace: nothing to do.
func (c *Cluster) iptables(ctx context.Context, id int, args ...string) error {
	pid, err := c.PID(ctx, id)
	if err != nil {
		return err
	}
	if pid == 0 {
		return nil
	}
	full := append([]string{"-t", strconv.Itoa(pid), "-n", "iptables", "-w"}, args...)
	_, err = c.r.run(ctx, "nsenter", full...)
	return err
}

// Disconnect takes node id off the private network (docker network
// disconnect): the fallback partition where iptables is unavailable. It
// also cuts the node from clients, as its published port goes with it.
func (c *Cluster) Disconnect(ctx context.Context, id int) error {
	_, err := dockerRun(ctx, c.r, "network", "disconnect", c.network, c.Node(id).Container)
	return err
}

// Reconnect puts a disconnected node back, under its name.
func (c *Cluster) Reconnect(ctx context.Context, id int) error {
	n := c.Node(id)
	_, err := dockerRun(ctx, c.r, "network", "connect", "--alias", n.Host, c.network, n.Container)
	return err
}
