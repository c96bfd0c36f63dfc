package consensus

import "slices"

// Decisions in the newest membership of the log.
//
// A membership change takes effect when it is applied (confchange.go), so a
// member's applied membership can lag its log by more than one change: a
// member restarted with a durable commit index older than the changes its
// log holds applies them only once a leader tells it they are committed.
// Counting votes in that old membership let such a member win against the
// group's real majority (sim seed 953843 with --all-faults:
// __consumer_offsets-0 had gone from voters [3 4 5] to [2 3 4]; n3,
// restarted at applied 71 with both changes in its log to 98, campaigned
// in [3 4 5], won with n3 and the removed n5, and committed its own entry
// 99 over the group's committed one). Two successive majorities overlap;
// majorities two changes apart need not.
//
// The rule, for (pre-)candidates and leaders: while the log holds a
// membership whose voters are not the applied ones, a decision needs a
// majority of the voters of that newest membership (tracker.logVoters,
// tracker.decidingVoters): an election is won only with it
// (tracker.tallyVotes), an index is committed only once it holds it
// (tracker.committedIndex). Otherwise it is the plain majority of the
// applied voters.
//
// Why it is safe. The newest membership in a log is the one the Raft
// dissertation (§4.1) uses for every decision: a server uses the latest
// configuration in its log, committed or not. Its safety argument for
// single-server changes needs that a leader appends a change only after
// the previous one and an entry of its own term are committed; ours waits
// for them to be applied, which is later. Every decision we take has a
// majority of that newest membership, so every run of ours is a run the
// dissertation's algorithm allows, and its proof (Leader Completeness, so
// State Machine Safety) covers us. Who may stand follows the same rule: a
// voter of the applied membership or of the newest one in its log (raft.go
// promotable), so a learner whose log holds the uncommitted change that
// promotes it campaigns, and may lead until it applies that change with
// its first committed entry (a member of neither never leads).
//
// Not a majority of the applied membership as well. From h-953 to
// h-3770 a decision needed both, which only made decisions rarer, and
// once too rare: a committed removal lets the removed member go (a broker
// deletes its replica once it applied its removal, node/tombstone.go), and
// a member whose log holds that removal beyond its applied index still
// counted it (sim seed 1603770 with --all-faults: __consumer_offsets-0
// went from voters [1 2 3 5] to [1 3 5] at entry 14, committed by n1, n2
// and n5; n2 deleted its replica, n5 restarted at applied 0 with the
// removal in its log, n1 lost its log to a lying fsync and, fenced, voted
// for no log of its term; n3 and n5, a majority of [1 3 5] holding every
// committed entry, needed 3 of [1 2 3 5] and the partition stayed
// leaderless for good, so its consumer groups had no coordinator).
//
// Liveness. The rule binds only while a log holds changes beyond the
// applied index: a leader elected under it commits its first entry with
// the newest majority, applies every change before that entry, and from
// then on its applied membership is its newest. In a log every change but
// the last is committed (a leader appends a change only after applying the
// one before), so the newest membership is the committed one or the
// committed one plus one uncommitted change at the tail: a crashed
// leader's proposal, for instance. A candidate holding that change needs a
// majority of the new membership; a candidate without it needs the old
// majority, and can win if its log is as up to date as a majority's. The
// server a change adds must be allowed to stand: its log may be the only
// one a majority of the new membership accepts (sim seed 1071630: the
// proposer lost its first entry of a later term, held by the new voter
// alone, in a crash before its fsync, and a fenced member accepted only a
// log of that later term; while only applied voters campaigned, the group
// never elected a leader). So the group elects a leader whenever a
// majority of the newest membership some up-to-date member holds is up and
// connected, as the dissertation's rule does. The change is then
// committed, or replaced by the new leader's log, and the rule lapses once
// it is applied.
//
// Reads and check-quorum. A leader's other majorities are counted in the
// same membership: the acknowledgements that confirm a ReadIndex round
// (readindex.go; a node's read lease is that round, node/lease.go), the
// members check-quorum must have heard from (tracker.quorumActive), and
// "we alone are the quorum" (tracker.soleDecider, Status.SoleVoter). Until
// h-quorum they counted the applied voters, and a leader can be elected
// two changes ahead of those: it restarted with an applied index before a
// committed change its log holds and the next one, won in the newest
// membership, committed its first entry there, and applies the backlog in
// bounded steps (Config.MaxCommittedBytesPerReady; a node's apply also
// waits for fsync rounds). Two changes apart, majorities need not meet:
// applied [1 2 3], newest [1 2 3 4 5], so {1, 2} confirmed reads and kept
// 1 leading while {3, 4, 5} elected 3 and committed (1 answered a read at
// 35 after 3 committed 37: TestReadIndexCountsNewestMembership, and
// TestCheckQuorumCountsNewestMembership; with applied [1] and newest
// [1 2 3], 1 answered at once: TestReadIndexSingleAppliedVoter). Why the newest alone
// suffices: a round confirmed by a majority of the leader's newest
// membership is the dissertation's ReadIndex (§6.4) under the
// dissertation's configuration rule, whose leaders' memberships differ by
// at most one change, so their majorities meet; the acknowledging members
// answered in the leader's term after the round started, and each refuses
// votes for an election timeout (raft.go inLease: every member, whatever
// its applied membership, so the promise binds in any candidate's
// count). A newer leader needs a majority of its own newest membership,
// which is the leader's, one change before it, or one after (appended by
// this leader once it applied everything before); each meets a majority
// of the leader's newest, so it needs one of those votes. Followers take no
// majority decisions: a follower's in-lease refusal is per member, not
// counted in any membership.
//
// The lost-log fence's term probe. A follower under the lost-log fence
// counts one thing: the voters whose answers it needs before it takes a
// leader's messages, enough that every majority holds one of them
// (fence.go). Those are majorities that elect and commit, so it counts
// the voters of the newest membership in its log too (probeVoters), not
// its applied voters (until h-probe: a replaced replica that ticked before
// applying its bootstrap entries asked nobody and let a stale leader
// commit over a later term's entry; TestLostLogProbeCountsVotersInLog,
// TestLostLogProbeTwoChangesBehind).

// newestConf is the membership after every configuration change in the
// log: the applied membership with the changes after the applied index
// replayed on it. A change the applied membership already holds (a
// restarted replica's checkpoint may be ahead of its applied index) sets
// the same membership again, and a change that does not decode or that
// applyConfChange would refuse is skipped as there, so the replay agrees
// with what applying the log will give.
func (r *raft) newestConf() (ConfState, error) {
	cs := r.trk.confState()
	lo, last := r.log.applied+1, r.log.lastIndex()
	if lo > last {
		return cs, nil
	}
	has, err := r.log.hasType(lo, last+1, EntryConfChange)
	if err != nil || !has {
		return cs, err
	}
	for lo <= last {
		ents, err := r.log.slice(lo, last+1, confScanBytes)
		if err != nil {
			return ConfState{}, err
		}
		if len(ents) == 0 {
			return ConfState{}, ErrUnavailable
		}
		for _, e := range ents {
			if e.Type != EntryConfChange {
				continue
			}
			cc, err := UnmarshalConfChange(e.Data)
			if err != nil {
				continue
			}
			if v, l, err := nextConfig(cs.Voters, cs.Learners, cc); err == nil {
				cs = ConfState{Voters: v, Learners: l}
			}
		}
		lo = ents[len(ents)-1].Index + 1
	}
	return cs, nil
}

// confScanBytes bounds each read of newestConf's replay.
const confScanBytes = 1 << 20

// learnNewestConf reads the newest membership of the log before a
// campaign. An error (the log cannot be read) means no campaign: the
// member cannot tell which majority it needs.
func (r *raft) learnNewestConf() error {
	cs, err := r.newestConf()
	if err != nil {
		return err
	}
	r.setLogConf(cs)
	return nil
}

// setLogConf records the newest membership of the log and gives its
// voters a progress (their votes and acknowledgements count).
func (r *raft) setLogConf(cs ConfState) {
	r.trk.logConf = &cs
	r.trk.logVoters = sortedUnique(cs.Voters)
	r.syncProgress()
}

// forgetLogConf drops it: a follower counts nothing.
func (r *raft) forgetLogConf() {
	r.trk.logConf, r.trk.logVoters = nil, nil
}

// logConfAfter records a change this leader appended: the newest
// membership becomes the one after it.
func (r *raft) logConfAfter(cc ConfChange) {
	cs := r.trk.confState()
	if r.trk.logConf != nil {
		cs = *r.trk.logConf
	}
	if v, l, err := nextConfig(cs.Voters, cs.Learners, cc); err == nil {
		r.setLogConf(ConfState{Voters: v, Learners: l})
	}
}

// syncProgress gives every member of ids() a progress, as switchConfig
// does for a new member, and drops the progress of any other id.
func (r *raft) syncProgress() {
	ids := r.trk.ids()
	for _, id := range ids {
		if r.trk.progress[id] != nil {
			r.trk.progress[id].isLearner = r.trk.isLearner(id)
			continue
		}
		pr := &progress{
			next:         r.log.lastIndex() + 1,
			inflights:    newInflights(r.maxInflightMsgs, r.maxInflightBytes),
			recentActive: true,
			isLearner:    r.trk.isLearner(id),
		}
		if id == r.id {
			pr.match = r.log.persistedIndex()
		}
		r.trk.progress[id] = pr
	}
	for id := range r.trk.progress { //floe:unordered deleting from a map
		if _, ok := slices.BinarySearch(ids, id); !ok {
			delete(r.trk.progress, id)
		}
	}
}
