package workload

import (
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config shapes the workload.
type Config struct {
	Brokers     []string // client (seed) addresses
	Topic       string
	Partitions  int32
	Replication int16
	Producers   int
	// Rate is produce operations per second over all producers (0: as
	// fast as acks come back).
	Rate      float64
	Groups    int // consumer groups
	Consumers int // consumers per group
	Fetchers  int // direct fetchers
	// OpTimeout bounds one operation; past it the outcome is recorded as
	// info (a produce's delivery timeout).
	OpTimeout time.Duration
	Seed      int64
	Log       io.Writer
	// TxnProducers is the transactional workload's producers (txn.go; 0:
	// none), over TxnPartitions partitions of TxnTopic, TxnRate
	// transactions per second in all, with transaction.timeout.ms
	// TxnTimeout. It adds a read_committed and a read_uncommitted reader.
	TxnProducers  int
	TxnTopic      string
	TxnPartitions int32
	TxnRate       float64
	TxnTimeout    time.Duration
	// ClientOpts are added to every client's options: TLS and SASL when
	// the cluster runs with security on.
	ClientOpts []kgo.Opt
}

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.Topic == "" {
		c.Topic = "jepsen"
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if c.Replication == 0 {
		c.Replication = 3
	}
	if c.Producers == 0 {
		c.Producers = 4
	}
	if c.Groups == 0 {
		c.Groups = 1
	}
	if c.Consumers == 0 {
		c.Consumers = 2
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = 10 * time.Second
	}
	if c.TxnTopic == "" {
		c.TxnTopic = "jepsen-txn"
	}
	if c.TxnPartitions == 0 {
		c.TxnPartitions = 3
	}
	if c.TxnTimeout == 0 {
		c.TxnTimeout = 10 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

func (c *Config) group(i int) string { return fmt.Sprintf("jepsen-g%d", i) }
