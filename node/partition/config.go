package partition

// Config is a partition's effective topic configuration, parsed from the
// Kafka-named topic configs the controller holds.
type Config struct {
	RetentionMs       int64 // retention.ms; -1 keeps forever
	RetentionBytes    int64 // retention.bytes; -1 keeps everything
	SegmentBytes      int64 // segment.bytes
	SegmentMs         int64 // segment.ms
	Delete            bool  // cleanup.policy contains delete
	Compact           bool  // cleanup.policy contains compact
	DeleteRetentionMs int64 // delete.retention.ms
	MaxMessageBytes   int   // max.message.bytes
	MinInsyncReplicas int   // min.insync.replicas
	LogAppendTime     bool  // message.timestamp.type=LogAppendTime
	// ProducerIDExpirationMs is producer.id.expiration.ms: how long, in
	// the log's time, a producer's idempotence state outlives its last
	// batch (Producers).
	ProducerIDExpirationMs int64
}

// DefaultConfig is Kafka's default topic configuration.
func DefaultConfig() Config {
	return Config{
		RetentionMs:       7 * 24 * 3600 * 1000,
		RetentionBytes:    -1,
		SegmentBytes:      1 << 30,
		SegmentMs:         7 * 24 * 3600 * 1000,
		Delete:            true,
		DeleteRetentionMs: 24 * 3600 * 1000,
		MaxMessageBytes:   1048588,
		MinInsyncReplicas: 1,

		ProducerIDExpirationMs: DefaultProducerIDExpirationMs,
	}
}
