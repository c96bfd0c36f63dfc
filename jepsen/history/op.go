package history

import (
	"encoding/json"
	"fmt"
)

// Type is the kind of an event: the start of an operation or how it ended.
type Type string

const (
	// Invoke: a process started an operation.
	Invoke Type = "invoke"
	// OK: the operation happened; the completion carries its results.
	OK Type = "ok"
	// Fail: the client was told it did not happen. Checkers still treat it
	// as "may have happened" (see the package doc).
	Fail Type = "fail"
	// Info: the outcome is unknown (timeout, lost connection).
	Info Type = "info"
)

// Func names what an operation does.
type Func string

const (
	// Produce writes Records (Offset -1 on the invoke; the completion
	// carries the offsets the broker returned). All records of one produce
	// go to one topic-partition.
	Produce Func = "produce"
	// Poll is a consumer-group poll: Records read, from any partitions of
	// the consumer's assignment, in the order the client returned them.
	// Clients buffer fetches, so a poll's time window says nothing about
	// when its records were fetched: polls are not used for real-time checks.
	Poll Func = "poll"
	// Fetch is one direct fetch of one partition from Offsets[0] (the start
	// offset); the completion carries Records and HWMs[0], the high
	// watermark the broker reported with them.
	Fetch Func = "fetch"
	// Read is the full final read of one partition after healing: every
	// record from the log start up to the high watermark in HWMs[0].
	Read Func = "read"
	// Commit commits Offsets for Group (offset = next offset to consume).
	Commit Func = "commit"
	// FetchOffset reads Group's committed Offsets (OffsetFetch); the
	// completion holds the offsets read, -1 for none.
	FetchOffset Func = "fetch-offset"
	// Assign records that a consumer's assignment changed: Assigned is the
	// whole new assignment. Logged as a single ok event (no invoke).
	Assign Func = "assign"
	// Txn is one transaction over partitions of one topic: the invoke's
	// Records are the values it will write (Offset -1), Abort whether it
	// means to abort, Group the transactional id (its transactions run one
	// after another, across clients). The completion's Reads are what it read
	// (read_committed) between its writes, and Abort what it asked for in
	// the end. ok: the coordinator acknowledged that
	// end; info/fail: a commit was asked for and its answer is unknown, or
	// (Abort) the producer gave up without asking to commit. The
	// invoke's Offsets, if any, are the offsets of Group (the group named
	// as the transactional id) it sends to the transaction
	// (TxnOffsetCommit); the completion's CommitAt is when it asked to
	// commit (0: it did not).
	Txn Func = "txn"
	// TxnOffsets is an OffsetFetch of Group's committed offsets of the
	// transactional topic (Group is a producer's transactional id, the
	// group its transactions send offsets to); the completion's Offsets
	// are what was read (-1: none), only partitions answered without an
	// error. TxnOffsetsFinal is the same read after healing, once nothing
	// is pending (requireStable).
	TxnOffsets      Func = "txn-offsets"
	TxnOffsetsFinal Func = "txn-offsets-final"
	// TxnRead is one direct fetch of one partition at Isolation
	// (read_committed or read_uncommitted) from Offsets[0]; the completion
	// carries Records, HWMs[0] and LSOs[0] of that one response.
	TxnRead Func = "txn-read"
	// TxnFinal is the final read_committed read of one partition after
	// healing: every record up to HWMs[0], once the last stable offset
	// (LSOs[0]) reached it.
	TxnFinal Func = "txn-final"
	// Nemesis is a fault or heal, for the reader; checkers ignore it.
	// Logged as single info events by the nemesis process.
	Nemesis Func = "nemesis"
)

// TP names a topic-partition.
type TP struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TP) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Less orders topic-partitions by topic, then partition.
func (tp TP) Less(o TP) bool {
	if tp.Topic != o.Topic {
		return tp.Topic < o.Topic
	}
	return tp.Partition < o.Partition
}

// Record is one record of a topic-partition: produced (Offset -1 until
// acknowledged) or read.
type Record struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
}

// TP returns the record's topic-partition.
func (r Record) TP() TP { return TP{r.Topic, r.Partition} }

// Offset is an offset of a topic-partition: a committed offset, a fetch
// position or a high watermark, depending on the operation.
type Offset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// TP returns the offset's topic-partition.
func (o Offset) TP() TP { return TP{o.Topic, o.Partition} }

// The isolation levels of TxnRead.
const (
	ReadCommitted   = "read_committed"
	ReadUncommitted = "read_uncommitted"
)

// NoOffset is the offset of "nothing": no committed offset, no record yet.
const NoOffset int64 = -1

// Op is one event of a history. Which payload fields are used depends on F
// (see the Func constants).
type Op struct {
	// Index is the event's position in the history, from 0, in the order
	// events happened.
	Index int64 `json:"index"`
	// Process is the client that ran the operation. It runs one operation
	// at a time.
	Process int64 `json:"process"`
	Type    Type  `json:"type"`
	F       Func  `json:"f"`
	// Time is when the event happened, in nanoseconds (real or simulated).
	// Non-decreasing along the history.
	Time int64 `json:"time"`

	Group    string   `json:"group,omitempty"`
	Records  []Record `json:"records,omitempty"`
	Offsets  []Offset `json:"offsets,omitempty"`
	HWMs     []Offset `json:"hwms,omitempty"`
	Assigned []TP     `json:"assigned,omitempty"`

	// Abort, Reads, CommitAt: see Txn. Isolation, LSOs: see TxnRead and
	// TxnFinal.
	Abort     bool     `json:"abort,omitempty"`
	Reads     []Record `json:"reads,omitempty"`
	Isolation string   `json:"isolation,omitempty"`
	LSOs      []Offset `json:"lsos,omitempty"`
	CommitAt  int64    `json:"commit_at,omitempty"`

	// NotDurable marks a produce answered without the acks=all promise
	// (acks=0 or acks=1): its ok proves nothing, so checkers treat it as
	// info.
	NotDurable bool `json:"not_durable,omitempty"`
	// NotIdempotent marks a produce from a non-idempotent producer, whose
	// retries may legitimately write its values twice: duplicates of its
	// values are not reported.
	NotIdempotent bool `json:"not_idempotent,omitempty"`

	// Error is the client's error for fail and info, for the reader.
	Error string `json:"error,omitempty"`
	// Node is the broker that answered, when known (0: unknown).
	Node int32 `json:"node,omitempty"`
	// Note is free text for the reader (nemesis: what was done).
	Note string `json:"note,omitempty"`
}

// Completed reports whether the event ends an operation.
func (o Op) Completed() bool { return o.Type == OK || o.Type == Fail || o.Type == Info }

// String is a compact one-line form for anomaly reports.
func (o Op) String() string {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Sprintf("op %d", o.Index)
	}
	return string(b)
}

// History is a sequence of events in the order they happened.
type History []Op
