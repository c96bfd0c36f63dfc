package runtime

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/node"
)

// partitionCollector exports, from the same reactor snapshot as
// reactorCollector, the per-partition traffic, Raft and replication
// figures, and the same facts under the names kafka_exporter
// (github.com/danielqsj/kafka_exporter) uses, so its dashboards work on
// Floe.
//
// Series about a partition's offsets and replication come from its leader
// only, so summing over brokers counts each partition once. Cluster-wide
// figures (brokers, partitions per topic, leaderless partitions) come from
// each broker's copy of the metadata: take max() over brokers, not sum().
// Consumer-group series come from the group's coordinator only.
type partitionCollector struct {
	self int32

	bytesIn, recordsIn, bytesOut, recordsOut   *prometheus.Desc
	term, replicas, inSync, underReplicated    *prometheus.Desc
	underReplicatedCount, leaderless, brokers  *prometheus.Desc
	elections, leaderChanges, won, controlTerm *prometheus.Desc
	campaigns, stepDowns, preferredTransfers   *prometheus.Desc

	kBrokers, kTopicPartitions, kCurrent, kOldest, kLeader   *prometheus.Desc
	kReplicas, kISR, kUnderReplicated                        *prometheus.Desc
	kGroupCurrent, kGroupCurrentSum, kGroupLag, kGroupLagSum *prometheus.Desc
	kGroupMembers                                            *prometheus.Desc
}

func newPartitionCollector(self int32) *partitionCollector {
	pl := []string{"topic", "partition"}
	d := desc
	gl := []string{"consumergroup", "topic", "partition"}
	return &partitionCollector{
		self:       self,
		bytesIn:    d("floe_partition_bytes_in_total", "Record batch bytes produced to the partition (leader only).", pl...),
		recordsIn:  d("floe_partition_records_in_total", "Records produced to the partition (leader only).", pl...),
		bytesOut:   d("floe_partition_bytes_out_total", "Record batch bytes fetched from the partition (leader only).", pl...),
		recordsOut: d("floe_partition_records_out_total", "Records fetched from the partition, whole batches counted (leader only).", pl...),
		term:       d("floe_partition_raft_term", "The Raft term of this broker's replica of the partition (the leader epoch).", pl...),
		replicas:   d("floe_partition_replicas", "Replicas of the partition in the metadata (leader only).", pl...),
		inSync: d("floe_partition_in_sync_replicas",
			"Voters the leader heard from within an election timeout, itself included (leader only).", pl...),
		underReplicated: d("floe_partition_under_replicated",
			"1 if fewer replicas are in sync than the partition has (leader only).", pl...),
		underReplicatedCount: d("floe_partitions_under_replicated", "Partitions this broker leads with fewer replicas in sync than it has."),
		leaderless: d("floe_partitions_leaderless",
			"Partitions with no known leader, in this broker's view of the metadata (cluster-wide: use max over brokers)."),
		brokers:       d("floe_brokers", "Brokers registered in this broker's view of the metadata."),
		elections:     d("floe_raft_elections_total", "Elections started by Raft replicas on this broker (a new term as candidate)."),
		leaderChanges: d("floe_raft_leader_changes_total", "Times a Raft replica on this broker learnt of a new leader."),
		won:           d("floe_raft_leaderships_won_total", "Times a Raft replica on this broker became leader."),
		controlTerm:   d("floe_controller_raft_term", "The controller group's Raft term as this broker knows it."),
		campaigns: d("floe_raft_campaigns_total",
			"Campaigns Raft replicas on this broker started, by cause: timeout (no leader heard within an election timeout; pre-vote included) or transfer (a leader handed over).", "cause"),
		stepDowns: d("floe_raft_step_downs_total",
			"Leaders on this broker that stepped down, by cause: check_quorum (no majority heard within an election timeout), higher_term (a message of a later term), transfer_timeout (a transfer that did not finish).", "cause"),
		preferredTransfers: d("floe_raft_preferred_transfers_total",
			"Leadership transfers to a partition's preferred replica that leaders on this broker started."),

		kBrokers:         d("kafka_brokers", "kafka_exporter name: number of brokers in the cluster."),
		kTopicPartitions: d("kafka_topic_partitions", "kafka_exporter name: number of partitions of the topic.", "topic"),
		kCurrent:         d("kafka_topic_partition_current_offset", "kafka_exporter name: the partition's high watermark (leader only).", pl...),
		kOldest:          d("kafka_topic_partition_oldest_offset", "kafka_exporter name: the partition's log start offset (leader only).", pl...),
		kLeader:          d("kafka_topic_partition_leader", "kafka_exporter name: the partition's leader broker id (leader only).", pl...),
		kReplicas:        d("kafka_topic_partition_replicas", "kafka_exporter name: replicas of the partition (leader only).", pl...),
		kISR:             d("kafka_topic_partition_in_sync_replica", "kafka_exporter name: in-sync replicas of the partition (leader only).", pl...),
		kUnderReplicated: d("kafka_topic_partition_under_replicated_partition",
			"kafka_exporter name: 1 if the partition is under-replicated (leader only).", pl...),
		kGroupCurrent: d("kafka_consumergroup_current_offset",
			"kafka_exporter name: the group's committed offset (coordinator only).", gl...),
		kGroupCurrentSum: d("kafka_consumergroup_current_offset_sum",
			"kafka_exporter name: the group's committed offsets summed over the topic's partitions.", "consumergroup", "topic"),
		kGroupLag: d("kafka_consumergroup_lag",
			"kafka_exporter name: high watermark minus the group's committed offset (coordinator only).", gl...),
		kGroupMembers: d("kafka_consumergroup_members",
			"kafka_exporter name: members of the group (coordinator only).", "consumergroup"),
		kGroupLagSum: d("kafka_consumergroup_lag_sum",
			"kafka_exporter name: the group's lag summed over the topic's partitions.", "consumergroup", "topic"),
	}
}

func (c *partitionCollector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.bytesIn, c.recordsIn, c.bytesOut, c.recordsOut, c.term, c.replicas, c.inSync, c.underReplicated,
		c.underReplicatedCount, c.leaderless, c.brokers, c.elections, c.leaderChanges, c.won, c.controlTerm,
		c.campaigns, c.stepDowns, c.preferredTransfers,
		c.kBrokers, c.kTopicPartitions, c.kCurrent, c.kOldest, c.kLeader, c.kReplicas, c.kISR, c.kUnderReplicated,
		c.kGroupCurrent, c.kGroupCurrentSum, c.kGroupLag, c.kGroupLagSum, c.kGroupMembers}
}

// collect exports one snapshot; the reactorCollector took it.
func (c *partitionCollector) collect(out sink, st node.Stats, ps []node.PartitionStats, lags []node.GroupLag,
	cs node.ClusterStats, members []node.GroupMembers) {
	gauge, counter := out.gauge, out.counter
	counter(c.elections, float64(st.RaftElections))
	counter(c.leaderChanges, float64(st.RaftLeaderChanges))
	counter(c.won, float64(st.RaftLeadershipsWon))
	rc := st.RaftRoles
	counter(c.campaigns, float64(rc.CampaignsTimeout), "timeout")
	counter(c.campaigns, float64(rc.CampaignsTransfer), "transfer")
	counter(c.stepDowns, float64(rc.StepDownsCheckQuorum), "check_quorum")
	counter(c.stepDowns, float64(rc.StepDownsHigherTerm), "higher_term")
	counter(c.stepDowns, float64(rc.StepDownsTransferTimeout), "transfer_timeout")
	counter(c.preferredTransfers, float64(st.RaftPreferredTransfers))
	gauge(c.controlTerm, float64(st.ControllerTerm))
	gauge(c.brokers, float64(cs.Brokers))
	gauge(c.kBrokers, float64(cs.Brokers))
	gauge(c.leaderless, float64(cs.Leaderless))
	for _, t := range cs.Topics {
		gauge(c.kTopicPartitions, float64(t.Partitions), t.Topic)
	}
	under := 0
	for _, p := range ps {
		lv := []string{p.Topic, strconv.Itoa(int(p.Partition))}
		gauge(c.term, float64(p.LeaderEpoch), lv...)
		if !p.Leader {
			continue
		}
		counter(c.bytesIn, float64(p.Traffic.BytesIn), lv...)
		counter(c.recordsIn, float64(p.Traffic.RecordsIn), lv...)
		counter(c.bytesOut, float64(p.Traffic.BytesOut), lv...)
		counter(c.recordsOut, float64(p.Traffic.RecordsOut), lv...)
		ur := 0.0
		if p.InSync < p.Replicas {
			ur = 1
			under++
		}
		for _, g := range []struct {
			d *prometheus.Desc
			v float64
		}{
			{c.replicas, float64(p.Replicas)}, {c.kReplicas, float64(p.Replicas)},
			{c.inSync, float64(p.InSync)}, {c.kISR, float64(p.InSync)},
			{c.underReplicated, ur}, {c.kUnderReplicated, ur},
			{c.kCurrent, float64(p.HighWatermark)}, {c.kOldest, float64(p.StartOffset)},
			{c.kLeader, float64(c.self)},
		} {
			gauge(g.d, g.v, lv...)
		}
	}
	gauge(c.underReplicatedCount, float64(under))
	c.collectGroups(gauge, lags)
	for _, m := range members {
		gauge(c.kGroupMembers, float64(m.Members), m.Group)
	}
}

// collectGroups exports the coordinators' group offsets and lag under
// kafka_exporter's names; lags is sorted by group, topic, partition.
func (c *partitionCollector) collectGroups(gauge func(*prometheus.Desc, float64, ...string), lags []node.GroupLag) {
	for i := 0; i < len(lags); {
		j, offSum, lagSum, hasLag := i, 0.0, 0.0, false
		for ; j < len(lags) && lags[j].Group == lags[i].Group && lags[j].Topic == lags[i].Topic; j++ {
			l := lags[j]
			lv := []string{l.Group, l.Topic, strconv.Itoa(int(l.Partition))}
			gauge(c.kGroupCurrent, float64(l.Committed), lv...)
			offSum += float64(l.Committed)
			if l.Lag >= 0 {
				gauge(c.kGroupLag, float64(l.Lag), lv...)
				lagSum += float64(l.Lag)
				hasLag = true
			}
		}
		gauge(c.kGroupCurrentSum, offSum, lags[i].Group, lags[i].Topic)
		if hasLag {
			gauge(c.kGroupLagSum, lagSum, lags[i].Group, lags[i].Topic)
		}
		i = j
	}
}
