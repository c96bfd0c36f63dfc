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
// one group share the requests, as a queue), calls its handler for each
// request of a poll, sends the replies to the topics and partitions the
// requests name, with their correlation ids, and commits the poll's
// offsets in one of two ways:
//
//   - NewResponder, at least once: the offsets are marked for commit only
//     after the replies are acknowledged, so a responder that dies in
//     between answers again (the requester drops the second reply).
//   - NewTransactionalResponder, exactly once for read_committed
//     requesters: franz-go's GroupTransactSession puts a poll's replies
//     and its offsets in one transaction (KIP-447: the offsets go through
//     TxnOffsetCommit with the group's generation). A responder that
//     stops (its context ends) aborts the transaction in progress; one
//     that dies leaves it open until its transactional id is used again
//     (InitProducerId aborts it) or the transaction times out
//     (DefaultTransactionTimeout, 10 s). Either way the aborted replies
//     are never visible read_committed, and the requests are answered
//     again. Requesters must read read_committed (pass
//     kgo.FetchIsolationLevel(kgo.ReadCommitted()) to NewRequester) to
//     see each reply once; an open transaction holds back their inbox
//     partition until it ends. Each responder of a group needs its own
//     transactional id.
//
// The handler runs once per delivery, not once per request: a request
// whose transaction aborted is handled again. Exactly once is the
// replies' visibility and the offsets, not the handler's side effects.
//
// Reply status: a handler error is sent back as a reply with the header
// floe_reply_error (its text) and no value, so the requester's Request
// returns an *Error instead of waiting for its deadline.
package reqreply
