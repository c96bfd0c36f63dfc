package check

// The transactional checker, shared by the simulator's transactional
// workload (sim/txn.go, through sim/txncheck.go) and the Docker suite's
// (jepsen/workload/txn.go, through txnhist.go): it compares the final
// read_committed contents of a topic with what the producers were told
// and with what was read during the run, including what each transaction
// itself read between its writes (consume-transform-produce, as Jepsen's
// Kafka workload does). Pure: it takes the transactions and returns the
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
	"sort"
	"strings"
)

// TxnOutcome is what a transaction's producer was told.
type TxnOutcome uint8

const (
	// TxnUnknown: the commit was asked for and its answer never came (or
	// was an error): the transaction may have committed or not.
	TxnUnknown TxnOutcome = iota
	// TxnCommitted: EndTxn(commit) was acknowledged.
	TxnCommitted
	// TxnAborted: nothing of it may ever be visible: the coordinator
	// acknowledged its abort (EndTxn abort), or its producer never asked
	// to commit it.
	TxnAborted
)

// Txn is one transaction a producer ran.
type Txn struct {
	Name     string
	Producer string // transactional id: its transactions are in process order
	// Values are the values it wrote, by partition of the one topic.
	Values  map[int32][]string
	Outcome TxnOutcome
	// Reads: what the transaction read (read_committed) between its
	// writes, consume-transform-produce style, for the cycle check.
	Reads []string
	// Group and Offsets: the consumer group offsets it sent to the
	// transaction (TxnOffsetCommit), by partition of the one topic; nil
	// when it sent none. CommitAsked is when its EndTxn(commit) was first
	// sent (0: never), on the clock of TxnOffsetRead (txnoffsets.go).
	Group       string
	Offsets     map[int32]int64
	CommitAsked int64
}

// TxnAnomaly is one violation: its kind (aborted-read, lost-write,
// duplicate, torn-transaction, uncommitted-read, g1c) and a description.
type TxnAnomaly struct{ Kind, Msg string }

// TxnCounts says how many transactions had each outcome.
type TxnCounts struct{ Committed, Aborted, Unknown int }

// TxnAnomalies checks a transactional history: txns in the order they
// began, the final read_committed contents by partition, and the values a
// read_committed reader saw during the run.
func TxnAnomalies(txns []*Txn, final map[int32][]string, readDuring map[string]bool) ([]TxnAnomaly, TxnCounts) {
	var out []TxnAnomaly
	bad := func(kind, msg string) { out = append(out, TxnAnomaly{kind, msg}) }
	count := map[string]int{}
	for _, vals := range final {
		for _, v := range vals {
			count[v]++
		}
	}
	var n TxnCounts
	visibleTxn := make([]bool, len(txns))
	for i, t := range txns {
		visible, total := 0, 0
		for _, pt := range sortedInt32Keys(t.Values) {
			for _, v := range t.Values[pt] {
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
		switch t.Outcome {
		case TxnCommitted:
			n.Committed++
			if visible != total {
				bad("lost-write", fmt.Sprintf("%s was committed; %d of its %d values are visible", t.Name, visible, total))
			}
		case TxnAborted:
			n.Aborted++
			if visible > 0 {
				bad("aborted-read", fmt.Sprintf("%s was aborted; %d of its %d values are visible", t.Name, visible, total))
			}
		default:
			n.Unknown++
			if visible != 0 && visible != total {
				bad("torn-transaction", fmt.Sprintf("%s (outcome unknown): %d of its %d values are visible", t.Name, visible, total))
			}
		}
	}
	for _, v := range sortedKeys(readDuring) {
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
func txnCycles(txns []*Txn, visible []bool) []TxnAnomaly {
	var out []TxnAnomaly
	writer := map[string]int{}
	for i, t := range txns {
		for _, vals := range t.Values { //floe:unordered filling a map
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
		if prev, ok := lastOf[t.Producer]; ok && t.Producer != "" {
			add(prev, i, "process")
		}
		lastOf[t.Producer] = i
		for _, v := range t.Reads {
			w, ok := writer[v]
			switch {
			case !ok:
			case w == i:
				out = append(out, TxnAnomaly{"uncommitted-read", fmt.Sprintf("%s read its own write %s before it committed", t.Name, v)})
			case visible[w]:
				add(w, i, "wr")
			}
		}
	}
	if cyc := findCycle(edges); cyc != nil {
		var b strings.Builder
		for k, i := range cyc {
			next := cyc[(k+1)%len(cyc)]
			fmt.Fprintf(&b, "%s -%s-> ", txns[i].Name, kinds[[2]int{i, next}])
		}
		b.WriteString(txns[cyc[0]].Name)
		out = append(out, TxnAnomaly{"g1c", "cycle of committed transactions: " + b.String()})
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

// sortedInt32Keys returns a partition map's keys in order.
func sortedInt32Keys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m { //floe:unordered sorted below
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
