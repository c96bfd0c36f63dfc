package sim

// The transactional workload's checker (txn.go): it compares the final
// read_committed contents of the topic with what the producers were told
// and with what was read during the run, including what each transaction
// itself read between its writes (consume-transform-produce, as Jepsen's
// Kafka workload does). Pure: it takes the history and returns the
// anomalies found, so it can be tested on hand-made histories.
//
// Cycles (G1c, cyclic information flow). Give every transaction that
// committed the moment c(T) its commit decision became durable. Two kinds
// of edge A → B each imply c(A) < c(B):
//
//   - write-read: B read (read_committed, before asking to commit) a value
//     A wrote, so A's commit marker was on that partition before B's read,
//     and so c(A) < read < c(B);
//   - process order: A and B ran on the same producer, A first; B began
//     only after A's EndTxn was answered (or, outcome unknown, after an
//     InitProducerId that would have waited for A's markers).
//
// A cycle of such edges is therefore impossible in a correct system. It
// appears when read_committed serves data of a transaction still open
// that later commits: two producers each read the other's open write.
// The uncommitted-read check cannot see that (both values end up
// committed); this one does.

import (
	"fmt"
	"strings"
)

// txnAnomaly is one violation: its kind (aborted-read, lost-write, ...)
// and a description.
type txnAnomaly struct{ kind, msg string }

// txnCounts says how many transactions had each outcome.
type txnCounts struct{ committed, aborted, unknown int }

// txnAnomalies checks a transactional history: txns in the order they
// began, the final read_committed contents by partition, and the values a
// read_committed reader saw during the run.
func txnAnomalies(txns []*txnRec, final map[int32][]string, readDuring map[string]bool) ([]txnAnomaly, txnCounts) {
	var out []txnAnomaly
	bad := func(kind, msg string) { out = append(out, txnAnomaly{kind, msg}) }
	count := map[string]int{}
	for _, vals := range final {
		for _, v := range vals {
			count[v]++
		}
	}
	var n txnCounts
	visibleTxn := make([]bool, len(txns))
	for i, t := range txns {
		visible, total := 0, 0
		for _, pt := range sortedParts(t.values) {
			for _, v := range t.values[pt] {
				total++
				if count[v] > 0 {
					visible++
				}
				if count[v] > 1 {
					bad("duplicate", fmt.Sprintf("%s appears %d times", v, count[v]))
				}
			}
		}
		visibleTxn[i] = total > 0 && visible == total
		switch t.outcome {
		case txnCommitted:
			n.committed++
			if visible != total {
				bad("lost-write", fmt.Sprintf("%s was committed; %d of its %d values are visible", t.name, visible, total))
			}
		case txnAborted:
			n.aborted++
			if visible > 0 {
				bad("aborted-read", fmt.Sprintf("%s was aborted; %d of its %d values are visible", t.name, visible, total))
			}
		default:
			n.unknown++
			if visible != 0 && visible != total {
				bad("torn-transaction", fmt.Sprintf("%s (outcome unknown): %d of its %d values are visible", t.name, visible, total))
			}
		}
	}
	for _, v := range sortedStrings(readDuring) {
		if count[v] == 0 {
			bad("uncommitted-read", fmt.Sprintf("read_committed read %s during the run; it never committed", v))
		}
	}
	out = append(out, txnCycles(txns, visibleTxn)...)
	return out, n
}

// txnCycles builds the write-read and process-order graph over the
// transactions that committed (visible[i]) and reports a read of a
// transaction's own uncommitted write and the first cycle found.
func txnCycles(txns []*txnRec, visible []bool) []txnAnomaly {
	var out []txnAnomaly
	writer := map[string]int{}
	for i, t := range txns {
		for _, vals := range t.values { //floe:unordered filling a map
			for _, v := range vals {
				writer[v] = i
			}
		}
	}
	edges := make([][]int, len(txns))
	kinds := map[[2]int]string{}
	add := func(a, b int, kind string) {
		if _, ok := kinds[[2]int{a, b}]; !ok {
			kinds[[2]int{a, b}] = kind
			edges[a] = append(edges[a], b)
		}
	}
	lastOf := map[string]int{} // producer → its latest committed transaction
	for i, t := range txns {
		if !visible[i] {
			continue
		}
		if prev, ok := lastOf[t.producer]; ok && t.producer != "" {
			add(prev, i, "process")
		}
		lastOf[t.producer] = i
		for _, v := range t.reads {
			w, ok := writer[v]
			switch {
			case !ok:
			case w == i:
				out = append(out, txnAnomaly{"uncommitted-read", fmt.Sprintf("%s read its own write %s before it committed", t.name, v)})
			case visible[w]:
				add(w, i, "wr")
			}
		}
	}
	if cyc := findCycle(edges); cyc != nil {
		var b strings.Builder
		for k, i := range cyc {
			next := cyc[(k+1)%len(cyc)]
			fmt.Fprintf(&b, "%s -%s-> ", txns[i].name, kinds[[2]int{i, next}])
		}
		b.WriteString(txns[cyc[0]].name)
		out = append(out, txnAnomaly{"g1c", "cycle of committed transactions: " + b.String()})
	}
	return out
}

// findCycle returns the nodes of a cycle of the directed graph (edges[a]
// lists a's successors), in edge order, or nil. Deterministic: nodes and
// edges are visited in index and insertion order.
func findCycle(edges [][]int) []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(edges))
	parent := make([]int, len(edges))
	for root := range edges {
		if color[root] != white {
			continue
		}
		// Iterative DFS: stack of (node, next edge to look at).
		type frame struct{ node, next int }
		stack := []frame{{root, 0}}
		color[root] = grey
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == len(edges[f.node]) {
				color[f.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			to := edges[f.node][f.next]
			f.next++
			switch color[to] {
			case grey: // back edge: the cycle is to ... f.node
				cyc := []int{f.node}
				for n := f.node; n != to; {
					n = parent[n]
					cyc = append(cyc, n)
				}
				for i, j := 0, len(cyc)-1; i < j; i, j = i+1, j-1 {
					cyc[i], cyc[j] = cyc[j], cyc[i]
				}
				return cyc
			case white:
				color[to], parent[to] = grey, f.node
				stack = append(stack, frame{to, 0})
			}
		}
	}
	return nil
}
