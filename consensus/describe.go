package consensus

import (
	"fmt"
	"strconv"
	"strings"
)

// Compact, stable text forms of messages, entries and Ready, for traces and
// the scenario tests' expected output.

func describeEntry(e Entry) string {
	s := fmt.Sprintf("%d/%d %s", e.Term, e.Index, e.Type)
	if e.Type == EntryConfChange {
		if cc, err := UnmarshalConfChange(e.Data); err == nil {
			return s + " " + describeConfChange(cc)
		}
	}
	return s + " " + strconv.Quote(string(e.Data))
}

func describeConfChange(cc ConfChange) string {
	return fmt.Sprintf("%s %d", cc.Type, cc.NodeID)
}

func describeEntries(ents []Entry) string {
	parts := make([]string, len(ents))
	for i, e := range ents {
		parts[i] = describeEntry(e)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func describeIDs(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return "(" + strings.Join(parts, ",") + ")"
}

func describeConfState(cs ConfState) string {
	return "Voters:" + describeIDs(cs.Voters) + " Learners:" + describeIDs(cs.Learners)
}

func describeSnapshotMeta(m SnapshotMeta) string {
	return fmt.Sprintf("Index:%d Term:%d %s", m.Index, m.Term, describeConfState(m.ConfState))
}

// describeMessage prints the fields that matter for the message's type.
func describeMessage(m Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d->%d %s Term:%d", m.From, m.To, m.Type, m.Term)
	switch m.Type {
	case MsgApp:
		fmt.Fprintf(&b, " Log:%d/%d Commit:%d", m.LogTerm, m.Index, m.Commit)
		if len(m.Entries) > 0 {
			b.WriteString(" Entries:" + describeEntries(m.Entries))
		}
	case MsgAppResp:
		fmt.Fprintf(&b, " Index:%d", m.Index)
		if m.Reject {
			fmt.Fprintf(&b, " Rejected Hint:%d/%d", m.LogTerm, m.RejectHint)
		}
	case MsgVote, MsgPreVote:
		fmt.Fprintf(&b, " Log:%d/%d", m.LogTerm, m.Index)
	case MsgVoteResp, MsgPreVoteResp:
		if m.Reject {
			b.WriteString(" Rejected")
		}
	case MsgHeartbeat:
		fmt.Fprintf(&b, " Commit:%d", m.Commit)
	case MsgSnap:
		if m.Snapshot != nil {
			b.WriteString(" Snapshot:" + describeSnapshotMeta(m.Snapshot.Meta))
		}
	case MsgReadIndexResp:
		fmt.Fprintf(&b, " Index:%d", m.Index)
	}
	if len(m.Context) > 0 {
		fmt.Fprintf(&b, " Context:%q", m.Context)
	}
	return b.String()
}

// describeReady prints a Ready, one item per line.
func describeReady(rd Ready) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Ready MustSync=%t:\n", rd.MustSync)
	if rd.SoftState != nil {
		fmt.Fprintf(&b, "Lead:%d State:%s\n", rd.SoftState.Lead, rd.SoftState.RaftState)
	}
	if rd.HardState != (HardState{}) {
		fmt.Fprintf(&b, "HardState Term:%d Vote:%d Commit:%d\n", rd.HardState.Term, rd.HardState.Vote, rd.HardState.Commit)
	}
	if len(rd.Entries) > 0 {
		b.WriteString("Entries:\n")
		for _, e := range rd.Entries {
			b.WriteString(describeEntry(e) + "\n")
		}
	}
	if !rd.Snapshot.IsEmpty() {
		b.WriteString("Snapshot " + describeSnapshotMeta(rd.Snapshot.Meta) + "\n")
	}
	if len(rd.CommittedEntries) > 0 {
		b.WriteString("CommittedEntries:\n")
		for _, e := range rd.CommittedEntries {
			b.WriteString(describeEntry(e) + "\n")
		}
	}
	writeMsgs := func(title string, msgs []Message) {
		if len(msgs) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, m := range msgs {
			b.WriteString(describeMessage(m) + "\n")
		}
	}
	writeMsgs("Messages", rd.Messages)
	writeMsgs("MessagesAfterPersist", rd.MessagesAfterPersist)
	for _, rs := range rd.ReadStates {
		fmt.Fprintf(&b, "ReadState Index:%d Context:%q\n", rs.Index, rs.RequestCtx)
	}
	return strings.TrimRight(b.String(), "\n")
}
