// Package reqreply is request/reply over Kafka topics, on franz-go, with
// the headers Spring Kafka's ReplyingKafkaTemplate uses, so Floe's
// requesters and responders work with Spring applications:
//
//	kafka_replyTopic      the topic the reply goes to (UTF-8)
//	kafka_replyPartition  its partition, a 4-byte big-endian int
//	kafka_correlationId   an opaque id the reply carries back unchanged
//
// A Requester owns a reply topic partition (its inbox, for example a
// one-partition topic per requester, or a shared topic with a partition
// pinned per requester). It reads the inbox directly (no group), from the
// end as of its start, and matches replies to waiting requests by
// correlation id; a request ends with its reply, its context's deadline
// or its cancellation, and a late reply is dropped.
//
// A Responder reads a request topic as a consumer group (responders in
// one group share the requests, as a queue), calls its handler, sends
// the reply to the topic and partition the request names, with the
// correlation id, and only then marks the request's offset for commit:
// at least once (a responder that dies after replying and before the
// commit answers the request again; requesters drop the second reply).
// Replies are not yet written in the same transaction as the offset
// commit: not done.
//
// Reply status: a handler error is sent back as a reply with the header
// floe_reply_error (its text) and no value, so the requester's Request
// returns an *Error instead of waiting for its deadline.
package reqreply
