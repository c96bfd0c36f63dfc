package main

import (
	"flag"
	"time"

	"github.com/floe-broker/floe/node"
)

// addShareFlags registers the share group (KIP-932) flags of floe serve,
// named after Kafka's configs; 0 or empty means Kafka's default.
func addShareFlags(fs *flag.FlagSet) func() node.ShareConfig {
	reset := fs.String("share-auto-offset-reset", "latest", "where a share group starts on a partition it never read: latest or earliest")
	lock := fs.Int("share-record-lock-duration-ms", 30000, "how long a share consumer holds the records it fetched before they are redelivered")
	limit := fs.Int("share-delivery-count-limit", 5, "deliveries of one record before it is archived")
	session := fs.Int("share-session-timeout-ms", 45000, "how long a share group member may go without a heartbeat")
	interval := fs.Int("share-heartbeat-interval-ms", 5000, "heartbeat interval share group members are told to use")
	prefix := fs.String("dlq-topic-name-prefix", "dlq.", "KIP-1191 errors.deadletterqueue.topic.name.prefix: the prefix a share group's dead-letter topic name must have (empty: any name)")
	autoCreate := fs.Bool("dlq-auto-create-topics", true, "KIP-1191 errors.deadletterqueue.auto.create.topics.enable: create a missing dead-letter topic (opted in)")
	return func() node.ShareConfig {
		return node.ShareConfig{
			DeadLetterPrefix:       prefix,
			DeadLetterNoAutoCreate: !*autoCreate,
			AutoOffsetReset:        *reset,
			Lock:                   time.Duration(*lock) * time.Millisecond,
			DeliveryLimit:          int16(*limit),
			SessionTimeout:         time.Duration(*session) * time.Millisecond,
			HeartbeatInterval:      time.Duration(*interval) * time.Millisecond,
		}
	}
}
