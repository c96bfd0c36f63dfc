package runtime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/node"
)

// shareCollector exports the share groups' figures (node.ShareStats) at
// scrape time, labelled by group: counters of what this broker did as
// their coordinator, gauges of the share-partitions it coordinates now.
type shareCollector struct {
	b                                                     *Broker
	acquired, redelivered, acks, deadLettered, dlqDropped *prometheus.Desc
	inFlight, dlqPending, oldest                          *prometheus.Desc
}

func newShareCollector(b *Broker) *shareCollector {
	g := []string{"group"}
	return &shareCollector{
		b:            b,
		acquired:     prometheus.NewDesc("floe_share_records_acquired_total", "Share group records handed out by this broker as the group's coordinator (each delivery once).", g, nil),
		redelivered:  prometheus.NewDesc("floe_share_records_redelivered_total", "Share group records handed out again (delivery count above 1).", g, nil),
		acks:         prometheus.NewDesc("floe_share_acknowledgements_total", "Share group records acknowledged, by type: gap, accept, release, reject, renew.", []string{"group", "type"}, nil),
		deadLettered: prometheus.NewDesc("floe_share_dead_lettered_total", "Records copied to the group's dead-letter topic and archived.", g, nil),
		dlqDropped:   prometheus.NewDesc("floe_share_dead_letters_dropped_total", "Dead letters archived uncopied: the dead-letter partition refused them for good (larger than its max.message.bytes).", g, nil),
		inFlight:     prometheus.NewDesc("floe_share_records_in_flight", "Records acquired and locked now, on the share-partitions this broker coordinates.", g, nil),
		dlqPending:   prometheus.NewDesc("floe_share_dead_letters_pending", "Records waiting for their copy to the dead-letter topic.", g, nil),
		oldest:       prometheus.NewDesc("floe_share_oldest_in_flight_age_seconds", "Age of the oldest acquisition still locked; 0 when none.", g, nil),
	}
}

func (c *shareCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.redelivered, c.acks, c.deadLettered, c.dlqDropped, c.inFlight, c.dlqPending, c.oldest} {
		ch <- d
	}
}

var shareAckTypes = [5]string{"gap", "accept", "release", "reject", "renew"}

func (c *shareCollector) Collect(ch chan<- prometheus.Metric) {
	var stats []node.ShareGroupStats
	if !c.b.loop.call(func() { stats = c.b.reactor.ShareStats() }, 5*time.Second) {
		return
	}
	for _, s := range stats {
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), s.Group)
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s.Group)
		}
		counter(c.acquired, s.Acquired)
		counter(c.redelivered, s.Redelivered)
		counter(c.deadLettered, s.DeadLettered)
		counter(c.dlqDropped, s.DeadLetterDropped)
		for i, n := range s.Acks {
			ch <- prometheus.MustNewConstMetric(c.acks, prometheus.CounterValue, float64(n), s.Group, shareAckTypes[i])
		}
		gauge(c.inFlight, float64(s.InFlight))
		gauge(c.dlqPending, float64(s.DeadLetterPending))
		gauge(c.oldest, s.OldestInFlight.Seconds())
	}
}
