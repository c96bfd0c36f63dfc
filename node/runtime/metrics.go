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
	txnStarted, txnCommitted, txnAborted, txnOpen, txnOldestAge, txnRetries *prometheus.Desc
	lso, lsoLag, openTxns                                                   *prometheus.Desc
	telemetry, telemetryPushes                                              *prometheus.Desc
}

func newReactorCollector(b *Broker) *reactorCollector {
	pl := []string{"topic", "partition"}
	return &reactorCollector{
		b:          b,
		parts:      newPartitionCollector(b.opts.Node.NodeID),
		bytesIn:    prometheus.NewDesc("floe_produce_bytes_total", "Record batch bytes appended by produce requests.", nil, nil),
		recordsIn:  prometheus.NewDesc("floe_produce_records_total", "Records appended by produce requests.", nil, nil),
		bytesOut:   prometheus.NewDesc("floe_fetch_bytes_total", "Record batch bytes returned by fetch requests.", nil, nil),
		badBatches: prometheus.NewDesc("floe_produce_rejected_batches_total", "Produced batches refused by validation.", nil, nil),
		corrupt:    prometheus.NewDesc("floe_corrupt_reads_total", "Reads that met a checksum failure (never served).", nil, nil),
		syncRounds: prometheus.NewDesc("floe_sync_rounds_total", "Group-commit rounds started.", nil, nil),
		expired:    prometheus.NewDesc("floe_requests_expired_total", "Requests answered by their deadline because the handler had not answered within the request's timeout.", nil, nil),
		leo:        prometheus.NewDesc("floe_partition_log_end_offset", "Offset after the last appended batch.", pl, nil),
		hw:         prometheus.NewDesc("floe_partition_high_watermark", "Offset after the last committed batch.", pl, nil),
		start:      prometheus.NewDesc("floe_partition_log_start_offset", "First readable offset.", pl, nil),
		logBytes:   prometheus.NewDesc("floe_partition_log_bytes", "Bytes in the partition's log segments.", pl, nil),
		segments:   prometheus.NewDesc("floe_partition_segments", "Segments in the partition's log.", pl, nil),
		leader:     prometheus.NewDesc("floe_partition_leader", "1 if this broker leads the partition.", pl, nil),
		telemetry: prometheus.NewDesc("floe_client_telemetry", "KIP-714: the latest value clients pushed for a metric, summed across clients (gauges and sums only).",
			[]string{"metric"}, nil),
		telemetryPushes: prometheus.NewDesc("floe_client_telemetry_pushes_total", "KIP-714 PushTelemetry requests taken.", nil, nil),
		groupLag: prometheus.NewDesc("floe_consumer_group_lag", "Log end offset minus the group's committed offset, for groups this broker coordinates.",
			[]string{"group", "topic", "partition"}, nil),
		groupCommitted: prometheus.NewDesc("floe_consumer_group_committed_offset", "The group's committed offset, for groups this broker coordinates.",
			[]string{"group", "topic", "partition"}, nil),
		auditRecords: prometheus.NewDesc("floe_audit_records_total", "Audit records this broker queued for __audit_log.", nil, nil),
		auditDropped: prometheus.NewDesc("floe_audit_dropped_total", "Audit records dropped: a full queue, or larger than max.message.bytes.", nil, nil),
		tickStalls:   prometheus.NewDesc("floe_reactor_stalls_total", "Reactor ticks that came more than half an election timeout after the one before: the broker did not run for that long (paused, CPU-starved), which peers read as silence.", nil, nil),
		tickGapMax:   prometheus.NewDesc("floe_reactor_tick_gap_max_seconds", "The longest gap between two reactor ticks since start.", nil, nil),
		txnStarted:   prometheus.NewDesc("floe_txn_started_total", "Transactions begun on the transaction coordinators this broker hosted.", nil, nil),
		txnCommitted: prometheus.NewDesc("floe_txn_committed_total", "Transactions whose commit decision this broker's coordinators made durable.", nil, nil),
		txnAborted: prometheus.NewDesc("floe_txn_aborted_total", "Transactions this broker's coordinators decided to abort, by cause: end (EndTxn abort), timeout (transaction.timeout.ms), fence (InitProducerId of a new instance).",
			[]string{"cause"}, nil),
		txnRetries:   prometheus.NewDesc("floe_txn_marker_retries_total", "Times a coordinator sent a transaction's markers again after a failure.", nil, nil),
		txnOpen:      prometheus.NewDesc("floe_txn_open", "Transactions open (Ongoing, or decided with markers still out) on the coordinators this broker hosts.", nil, nil),
		txnOldestAge: prometheus.NewDesc("floe_txn_oldest_open_age_seconds", "Age of the oldest open transaction on this broker's coordinators; 0 when none is open.", nil, nil),
		lso:          prometheus.NewDesc("floe_partition_last_stable_offset", "Offset below which every transaction is decided: where read_committed readers stop.", pl, nil),
		lsoLag:       prometheus.NewDesc("floe_partition_lso_lag", "High watermark minus last stable offset: committed records read_committed readers cannot see yet.", pl, nil),
		openTxns:     prometheus.NewDesc("floe_partition_open_transactions", "Transactions open on the partition.", pl, nil),
	}
}

func (c *reactorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.bytesIn, c.recordsIn, c.bytesOut, c.badBatches, c.corrupt, c.syncRounds, c.expired, c.leo, c.hw, c.start, c.logBytes, c.segments, c.leader, c.groupLag, c.groupCommitted, c.auditRecords, c.auditDropped, c.tickStalls, c.tickGapMax,
		c.txnStarted, c.txnCommitted, c.txnAborted, c.txnOpen, c.txnOldestAge, c.txnRetries, c.lso, c.lsoLag, c.openTxns,
		c.telemetry, c.telemetryPushes} {
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
	if !c.b.loop.call(func() {
		st, ps = c.b.reactor.Stats()
		lags, ts = c.b.reactor.GroupLags(), c.b.reactor.TxnStats()
		cs, members = c.b.reactor.ClusterStats(), c.b.reactor.GroupMembers()
	}, 5*time.Second) {
		return
	}
	c.collectTxns(ch, ts)
	c.parts.collect(ch, st, ps, lags, cs, members)
	for _, l := range lags {
		lv := []string{l.Group, l.Topic, strconv.Itoa(int(l.Partition))}
		ch <- prometheus.MustNewConstMetric(c.groupCommitted, prometheus.GaugeValue, float64(l.Committed), lv...)
		if l.Lag >= 0 {
			ch <- prometheus.MustNewConstMetric(c.groupLag, prometheus.GaugeValue, float64(l.Lag), lv...)
		}
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	counter(c.bytesIn, float64(st.BytesIn))
	counter(c.recordsIn, float64(st.RecordsIn))
	counter(c.bytesOut, float64(st.BytesOut))
	counter(c.badBatches, float64(st.BadBatches))
	counter(c.corrupt, float64(st.CorruptReads))
	counter(c.syncRounds, float64(st.SyncRounds))
	counter(c.expired, float64(st.RequestsExpired))
	counter(c.auditRecords, float64(st.AuditRecords))
	counter(c.auditDropped, float64(st.AuditDropped))
	counter(c.tickStalls, float64(st.TickStalls))
	ch <- prometheus.MustNewConstMetric(c.tickGapMax, prometheus.GaugeValue, st.TickGapMax.Seconds())
	counter(c.telemetryPushes, float64(st.TelemetryPushes))
	for _, m := range st.Telemetry {
		ch <- prometheus.MustNewConstMetric(c.telemetry, prometheus.GaugeValue, m.Value, m.Name)
	}
	for _, p := range ps {
		lv := []string{p.Topic, strconv.Itoa(int(p.Partition))}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
		}
		gauge(c.leo, float64(p.LogEndOffset))
		gauge(c.hw, float64(p.HighWatermark))
		gauge(c.start, float64(p.StartOffset))
		gauge(c.logBytes, float64(p.LogBytes))
		gauge(c.segments, float64(p.Segments))
		gauge(c.lso, float64(p.LastStableOffset))
		gauge(c.lsoLag, float64(p.HighWatermark-p.LastStableOffset))
		gauge(c.openTxns, float64(p.OpenTxns))
		leader := 0.0
		if p.Leader {
			leader = 1
		}
		gauge(c.leader, leader)
	}
}

// collectTxns exports the transaction coordinators' figures.
func (c *reactorCollector) collectTxns(ch chan<- prometheus.Metric, ts node.TxnStats) {
	ch <- prometheus.MustNewConstMetric(c.txnStarted, prometheus.CounterValue, float64(ts.Starts))
	ch <- prometheus.MustNewConstMetric(c.txnCommitted, prometheus.CounterValue, float64(ts.Commits))
	ch <- prometheus.MustNewConstMetric(c.txnAborted, prometheus.CounterValue, float64(ts.AbortsByEnd), "end")
	ch <- prometheus.MustNewConstMetric(c.txnAborted, prometheus.CounterValue, float64(ts.AbortsByTime), "timeout")
	ch <- prometheus.MustNewConstMetric(c.txnAborted, prometheus.CounterValue, float64(ts.AbortsByFence), "fence")
	ch <- prometheus.MustNewConstMetric(c.txnRetries, prometheus.CounterValue, float64(ts.MarkerRetries))
	ch <- prometheus.MustNewConstMetric(c.txnOpen, prometheus.GaugeValue, float64(ts.Open))
	age := 0.0
	if ts.OldestStartMs >= 0 {
		age = max(0, time.Since(time.UnixMilli(ts.OldestStartMs)).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.txnOldestAge, prometheus.GaugeValue, age)
}
