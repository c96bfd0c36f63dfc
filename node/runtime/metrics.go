package runtime

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/kafka"
)

// metrics holds the broker's Prometheus metrics. Request metrics come from
// the Kafka server's observer hook, fsync latency from the disk worker, and
// everything the reactor knows (bytes, offsets, log sizes) from a collector
// that asks the reactor for a snapshot at scrape time.
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	netBytesIn  prometheus.Counter
	netBytesOut prometheus.Counter
	conns       prometheus.Gauge
	fsync       prometheus.Histogram
	fsyncPlans  prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_requests_total", Help: "Kafka requests served, by API."}, []string{"api"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_request_errors_total", Help: "Kafka requests that failed to decode or were refused, by API."}, []string{"api"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "floe_request_duration_seconds", Help: "Time from reading a Kafka request to writing its response, by API.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
	}, []string{"api"})
	m.netBytesIn = prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_network_bytes_in_total", Help: "Kafka request bytes read."})
	m.netBytesOut = prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_network_bytes_out_total", Help: "Kafka response bytes written."})
	m.conns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_connections", Help: "Open Kafka client connections."})
	m.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "floe_fsync_duration_seconds", Help: "Duration of one group-commit round of fsyncs.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
	})
	m.fsyncPlans = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "floe_fsync_round_logs", Help: "Logs synced in one group-commit round.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	})
	// Every advertised API starts with 0 errors, so an error-rate query
	// has series before the first error (rather than no data).
	for _, v := range node.Versions() {
		m.errors.WithLabelValues(apiName(v.Key))
	}
	m.reg.MustRegister(m.requests, m.errors, m.latency, m.netBytesIn, m.netBytesOut, m.conns, m.fsync, m.fsyncPlans)
	return m
}

func apiName(key int16) string {
	if key < 0 {
		return "unknown"
	}
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return strconv.Itoa(int(key))
}

// ObserveRequest implements kafka.Observer.
func (m *metrics) ObserveRequest(key, version int16, bytesIn, bytesOut int, latency time.Duration, failed bool) {
	name := apiName(key)
	m.requests.WithLabelValues(name).Inc()
	if failed {
		m.errors.WithLabelValues(name).Inc()
	}
	m.latency.WithLabelValues(name).Observe(latency.Seconds())
	m.netBytesIn.Add(float64(bytesIn))
	m.netBytesOut.Add(float64(bytesOut))
}

// ObserveConnOpen and ObserveConnClose implement kafka.Observer.
func (m *metrics) ObserveConnOpen()                   { m.conns.Inc() }
func (m *metrics) ObserveConnClose(kafka.CloseReason) { m.conns.Dec() }

// ObserveSync implements metricsSink.
func (m *metrics) ObserveSync(d time.Duration, plans int) {
	m.fsync.Observe(d.Seconds())
	m.fsyncPlans.Observe(float64(plans))
}

// reactorCollector exports the reactor's own figures at scrape time.
type reactorCollector struct {
	b     *Broker
	parts *partitionCollector // per-partition and kafka_exporter series (metrics_partitions.go)

	bytesIn, recordsIn, bytesOut, badBatches, corrupt, syncRounds, expired  *prometheus.Desc
	leo, hw, start, logBytes, segments, leader                              *prometheus.Desc
	groupLag, groupCommitted                                                *prometheus.Desc
	auditRecords, auditDropped                                              *prometheus.Desc
	tickStalls, tickGapMax                                                  *prometheus.Desc
	openRetries                                                             *prometheus.Desc
	txnStarted, txnCommitted, txnAborted, txnOpen, txnOldestAge, txnRetries *prometheus.Desc
	lso, lsoLag, openTxns                                                   *prometheus.Desc
	telemetry, telemetryPushes                                              *prometheus.Desc
	balancerMoves, balancerInFlight                                         *prometheus.Desc
}

func newReactorCollector(b *Broker) *reactorCollector {
	pl := []string{"topic", "partition"}
	return &reactorCollector{
		b:          b,
		parts:      newPartitionCollector(b.opts.Node.NodeID),
		bytesIn:    desc("floe_produce_bytes_total", "Record batch bytes appended by produce requests."),
		recordsIn:  desc("floe_produce_records_total", "Records appended by produce requests."),
		bytesOut:   desc("floe_fetch_bytes_total", "Record batch bytes returned by fetch requests."),
		badBatches: desc("floe_produce_rejected_batches_total", "Produced batches refused by validation."),
		corrupt:    desc("floe_corrupt_reads_total", "Reads that met a checksum failure (never served)."),
		syncRounds: desc("floe_sync_rounds_total", "Group-commit rounds started."),
		openRetries: desc("floe_replica_open_retries_total",
			"Replica opens put off because the process was out of file descriptors (retried a second later)."),
		expired:  desc("floe_requests_expired_total", "Requests answered by their deadline because the handler had not answered within the request's timeout."),
		leo:      desc("floe_partition_log_end_offset", "Offset after the last appended batch.", pl...),
		hw:       desc("floe_partition_high_watermark", "Offset after the last committed batch.", pl...),
		start:    desc("floe_partition_log_start_offset", "First readable offset.", pl...),
		logBytes: desc("floe_partition_log_bytes", "Bytes in the partition's log segments.", pl...),
		segments: desc("floe_partition_segments", "Segments in the partition's log.", pl...),
		leader:   desc("floe_partition_leader", "1 if this broker leads the partition.", pl...),
		telemetry: desc("floe_client_telemetry", "KIP-714: the latest value clients pushed for a metric, summed across clients (gauges and sums only).",
			"metric"),
		telemetryPushes: desc("floe_client_telemetry_pushes_total", "KIP-714 PushTelemetry requests taken."),
		groupLag: desc("floe_consumer_group_lag", "Log end offset minus the group's committed offset, for groups this broker coordinates.",
			"group", "topic", "partition"),
		groupCommitted: desc("floe_consumer_group_committed_offset", "The group's committed offset, for groups this broker coordinates.",
			"group", "topic", "partition"),
		auditRecords: desc("floe_audit_records_total", "Audit records this broker queued for __audit_log."),
		auditDropped: desc("floe_audit_dropped_total", "Audit records dropped: a full queue, or larger than max.message.bytes."),
		tickStalls:   desc("floe_reactor_stalls_total", "Reactor ticks that came more than half an election timeout after the one before: the broker did not run for that long (paused, CPU-starved), which peers read as silence."),
		tickGapMax:   desc("floe_reactor_tick_gap_max_seconds", "The longest gap between two reactor ticks since start."),
		txnStarted:   desc("floe_txn_started_total", "Transactions begun on the transaction coordinators this broker hosted."),
		txnCommitted: desc("floe_txn_committed_total", "Transactions whose commit decision this broker's coordinators made durable."),
		txnAborted: desc("floe_txn_aborted_total", "Transactions this broker's coordinators decided to abort, by cause: end (EndTxn abort), timeout (transaction.timeout.ms), fence (InitProducerId of a new instance).",
			"cause"),
		txnRetries:   desc("floe_txn_marker_retries_total", "Times a coordinator sent a transaction's markers again after a failure."),
		txnOpen:      desc("floe_txn_open", "Transactions open (Ongoing, or decided with markers still out) on the coordinators this broker hosts."),
		txnOldestAge: desc("floe_txn_oldest_open_age_seconds", "Age of the oldest open transaction on this broker's coordinators; 0 when none is open."),
		lso:          desc("floe_partition_last_stable_offset", "Offset below which every transaction is decided: where read_committed readers stop.", pl...),
		lsoLag:       desc("floe_partition_lso_lag", "High watermark minus last stable offset: committed records read_committed readers cannot see yet.", pl...),
		openTxns:     desc("floe_partition_open_transactions", "Transactions open on the partition.", pl...),
		balancerMoves: desc("floe_balancer_moves_total", "Balancing moves this broker proposed as the controller's leader and the controller accepted, by kind: replica (a reassignment) or leader (a preferred-leader change).",
			"kind"),
		balancerInFlight: desc("floe_balancer_moves_in_flight", "Reassignments in flight that the balancer started (from this broker's copy of the metadata)."),
	}
}

func (c *reactorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.bytesIn, c.recordsIn, c.bytesOut, c.badBatches, c.corrupt, c.syncRounds, c.expired, c.leo, c.hw, c.start, c.logBytes, c.segments, c.leader, c.groupLag, c.groupCommitted, c.auditRecords, c.auditDropped, c.tickStalls, c.tickGapMax, c.openRetries,
		c.txnStarted, c.txnCommitted, c.txnAborted, c.txnOpen, c.txnOldestAge, c.txnRetries, c.lso, c.lsoLag, c.openTxns,
		c.telemetry, c.telemetryPushes, c.balancerMoves, c.balancerInFlight} {
		ch <- d
	}
	for _, d := range c.parts.descs() {
		ch <- d
	}
}

func (c *reactorCollector) Collect(ch chan<- prometheus.Metric) {
	var st node.Stats
	var ps []node.PartitionStats
	var lags []node.GroupLag
	var ts node.TxnStats
	var cs node.ClusterStats
	var members []node.GroupMembers
	var bs node.BalancerStats
	if !c.b.loop.call(func() {
		st, ps = c.b.reactor.Stats()
		bs = c.b.reactor.BalancerStats()
		lags, ts = c.b.reactor.GroupLags(), c.b.reactor.TxnStats()
		cs, members = c.b.reactor.ClusterStats(), c.b.reactor.GroupMembers()
	}, 5*time.Second) {
		return
	}
	out := sink(ch)
	c.collectTxns(out, ts)
	c.parts.collect(out, st, ps, lags, cs, members)
	out.counter(c.balancerMoves, float64(bs.Moves), "replica")
	out.counter(c.balancerMoves, float64(bs.LeaderMoves), "leader")
	out.gauge(c.balancerInFlight, float64(bs.InFlight))
	for _, l := range lags {
		lv := []string{l.Group, l.Topic, strconv.Itoa(int(l.Partition))}
		out.gauge(c.groupCommitted, float64(l.Committed), lv...)
		if l.Lag >= 0 {
			out.gauge(c.groupLag, float64(l.Lag), lv...)
		}
	}
	for _, v := range []struct {
		d *prometheus.Desc
		v float64
	}{
		{c.bytesIn, float64(st.BytesIn)}, {c.recordsIn, float64(st.RecordsIn)}, {c.bytesOut, float64(st.BytesOut)},
		{c.badBatches, float64(st.BadBatches)}, {c.corrupt, float64(st.CorruptReads)}, {c.syncRounds, float64(st.SyncRounds)},
		{c.expired, float64(st.RequestsExpired)}, {c.auditRecords, float64(st.AuditRecords)},
		{c.auditDropped, float64(st.AuditDropped)}, {c.tickStalls, float64(st.TickStalls)},
		{c.openRetries, float64(st.OpenRetries)},
	} {
		out.counter(v.d, v.v)
	}
	out.gauge(c.tickGapMax, st.TickGapMax.Seconds())
	out.counter(c.telemetryPushes, float64(st.TelemetryPushes))
	for _, m := range st.Telemetry {
		out.gauge(c.telemetry, m.Value, m.Name)
	}
	for _, p := range ps {
		c.collectPartition(out, p)
	}
}

// collectPartition exports one local replica's log figures (every
// replica, leader or not).
func (c *reactorCollector) collectPartition(out sink, p node.PartitionStats) {
	leader := 0.0
	if p.Leader {
		leader = 1
	}
	lv := []string{p.Topic, strconv.Itoa(int(p.Partition))}
	for _, g := range []struct {
		d *prometheus.Desc
		v float64
	}{
		{c.leo, float64(p.LogEndOffset)}, {c.hw, float64(p.HighWatermark)}, {c.start, float64(p.StartOffset)},
		{c.logBytes, float64(p.LogBytes)}, {c.segments, float64(p.Segments)},
		{c.lso, float64(p.LastStableOffset)}, {c.lsoLag, float64(p.HighWatermark - p.LastStableOffset)},
		{c.openTxns, float64(p.OpenTxns)}, {c.leader, leader},
	} {
		out.gauge(g.d, g.v, lv...)
	}
}

// collectTxns exports the transaction coordinators' figures.
func (c *reactorCollector) collectTxns(out sink, ts node.TxnStats) {
	out.counter(c.txnStarted, float64(ts.Starts))
	out.counter(c.txnCommitted, float64(ts.Commits))
	out.counter(c.txnAborted, float64(ts.AbortsByEnd), "end")
	out.counter(c.txnAborted, float64(ts.AbortsByTime), "timeout")
	out.counter(c.txnAborted, float64(ts.AbortsByFence), "fence")
	out.counter(c.txnRetries, float64(ts.MarkerRetries))
	out.gauge(c.txnOpen, float64(ts.Open))
	age := 0.0
	if ts.OldestStartMs >= 0 {
		age = max(0, time.Since(time.UnixMilli(ts.OldestStartMs)).Seconds())
	}
	out.gauge(c.txnOldestAge, age)
}

// desc describes a metric with the given variable labels and no constant
// ones (the one shape every collector here uses).
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// sink is a collector's channel, with the two kinds of value the
// collectors here send.
type sink chan<- prometheus.Metric

func (s sink) gauge(d *prometheus.Desc, v float64, lv ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
}

func (s sink) counter(d *prometheus.Desc, v float64, lv ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
}
