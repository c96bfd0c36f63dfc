package check

// Transactional offsets (TxnOffsetCommit), checked for the simulator's
// transactional workload (sim/txnoffsets.go) and the Docker suite's
// (jepsen/workload/txn.go): a transaction may send a consumer group's
// offsets, which the group coordinator must hold pending until the
// transaction's marker. Each transaction sends, for every partition of its
// one topic, an offset no other transaction of the group sends (so an
// offset read names its transaction), and one producer's transactions send
// increasing offsets (so committed offsets only go up). Given the
// transactions and the OffsetFetch answers, TxnOffsetAnomalies reports:
//
//   - offset-uncommitted: an offset was read before its transaction's
//     commit was asked for (OffsetFetch returned a pending offset);
//   - offset-aborted: an offset of a transaction whose abort was
//     acknowledged (or that never asked to commit) was read;
//   - offset-unknown: an offset no transaction of the group sent was read;
//   - offset-regression: a read that began after another ended saw a lower
//     offset (or none) for the same group and partition;
//   - offset-lost: the final read of a partition is below the offset of a
//     transaction whose commit was acknowledged.

import (
	"fmt"
	"sort"
)

// TxnOffsetRead is one partition of one OffsetFetch answer.
type TxnOffsetRead struct {
	Group     string
	Partition int32
	// Offset is the committed offset answered, -1 for none.
	Offset int64
	// Sent and Done: when the read was sent and when its answer came, on
	// the clock of Txn.CommitAsked.
	Sent, Done int64
	// Final: a read after the heal, once no transaction was pending.
	Final bool
}

// offsetKey names one partition of one group's offsets.
type offsetKey struct {
	group string
	part  int32
}

// TxnOffsetAnomalies checks the offset reads against the transactions.
func TxnOffsetAnomalies(txns []*Txn, reads []TxnOffsetRead) []TxnAnomaly {
	var out []TxnAnomaly
	bad := func(kind, msg string) { out = append(out, TxnAnomaly{kind, msg}) }
	sender := map[offsetKey]map[int64]*Txn{}
	for _, t := range txns {
		for _, pt := range sortedInt32Keys(t.Offsets) {
			k := offsetKey{t.Group, pt}
			if sender[k] == nil {
				sender[k] = map[int64]*Txn{}
			}
			sender[k][t.Offsets[pt]] = t
		}
	}
	for _, rd := range reads {
		if rd.Offset < 0 {
			continue
		}
		t := sender[offsetKey{rd.Group, rd.Partition}][rd.Offset]
		where := fmt.Sprintf("group %s partition %d offset %d", rd.Group, rd.Partition, rd.Offset)
		switch {
		case t == nil:
			bad("offset-unknown", fmt.Sprintf("%s was read; no transaction sent it", where))
		case t.Outcome == TxnAborted:
			bad("offset-aborted", fmt.Sprintf("%s of %s was read; %s was aborted", where, t.Name, t.Name))
		case t.CommitAsked == 0 || rd.Done < t.CommitAsked:
			bad("offset-uncommitted", fmt.Sprintf("%s of %s was read before its commit was asked for", where, t.Name))
		}
	}
	out = append(out, offsetRegressions(reads)...)
	return append(out, lostOffsets(txns, reads)...)
}

// offsetRegressions: per group and partition, a read must see at least
// the offset of every read that ended before it was sent.
func offsetRegressions(reads []TxnOffsetRead) []TxnAnomaly {
	byKey := map[offsetKey][]TxnOffsetRead{}
	var keys []offsetKey
	for _, rd := range reads {
		k := offsetKey{rd.Group, rd.Partition}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], rd)
	}
	var out []TxnAnomaly
	for _, k := range keys {
		if a, ok := firstRegression(k, byKey[k]); ok {
			out = append(out, a)
		}
	}
	return out
}

// firstRegression sweeps one partition's reads in the order they were
// sent, folding in every read that ended before.
func firstRegression(k offsetKey, rs []TxnOffsetRead) (TxnAnomaly, bool) {
	bySent := append([]TxnOffsetRead(nil), rs...)
	sort.SliceStable(bySent, func(i, j int) bool { return bySent[i].Sent < bySent[j].Sent })
	byDone := append([]TxnOffsetRead(nil), rs...)
	sort.SliceStable(byDone, func(i, j int) bool { return byDone[i].Done < byDone[j].Done })
	floor, j := int64(-1), 0
	for _, rd := range bySent {
		for j < len(byDone) && byDone[j].Done < rd.Sent {
			floor = max(floor, byDone[j].Offset)
			j++
		}
		if rd.Offset < floor {
			return TxnAnomaly{"offset-regression", fmt.Sprintf("group %s partition %d: offset %d read after %d had been",
				k.group, k.part, rd.Offset, floor)}, true
		}
	}
	return TxnAnomaly{}, false
}

// lostOffsets: the final read of each partition holds at least the offset
// of every transaction whose commit was acknowledged.
func lostOffsets(txns []*Txn, reads []TxnOffsetRead) []TxnAnomaly {
	final := map[offsetKey]int64{}
	for _, rd := range reads {
		if rd.Final {
			final[offsetKey{rd.Group, rd.Partition}] = rd.Offset
		}
	}
	var out []TxnAnomaly
	for _, t := range txns {
		if t.Outcome != TxnCommitted {
			continue
		}
		for _, pt := range sortedInt32Keys(t.Offsets) {
			got, ok := final[offsetKey{t.Group, pt}]
			if ok && got < t.Offsets[pt] {
				out = append(out, TxnAnomaly{"offset-lost", fmt.Sprintf("%s was committed with group %s partition %d at offset %d; the final read has %d",
					t.Name, t.Group, pt, t.Offsets[pt], got)})
			}
		}
	}
	return out
}
