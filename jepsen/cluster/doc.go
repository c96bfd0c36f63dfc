// Package cluster runs a Floe cluster as Docker containers and injects
// faults into it from the host: kill -9 and restart, pause and resume,
// network partitions (iptables rules inside a container's network namespace
// through nsenter, or docker network disconnect).
//
// Everything it creates carries the label floe.jepsen=<run id>, and
// Clean(ctx, "") removes every such container, network and data directory,
// so a run interrupted at any point can be cleaned up afterwards
// (`jepsen clean`). Iptables rules live in the containers' own network
// namespaces and vanish with them.
//
// Network: nodes talk to each other on a private bridge network by name
// (node1:9093...). The host reaches each node only through its Kafka port,
// published on 127.0.0.1 (127.0.0.1:19092 for node1, +1 per node), which is
// also the address the node advertises to clients.
//
// This package drives the docker CLI (os/exec); it is harness code, not
// deterministic core code.
package cluster
