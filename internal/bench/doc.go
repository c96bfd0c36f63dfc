// Package bench is the load generator behind `floe bench`: open- and
// closed-loop producers and consumers for any Kafka-protocol broker (built on
// franz-go's kgo) and for NATS JetStream, a log-linear latency histogram, and
// the Result that the text and JSON reports print.
//
// How latency is measured. Every message carries the wall-clock time it was
// meant to be sent (unix nanoseconds) in its first 8 value bytes, or in a
// header when the value is shorter. The producer's acknowledgement callback
// and the consumer read it back, so produce latency is ack time minus send
// time, and end-to-end latency is consume time minus send time (producer and
// consumer on the same machine, so one clock). In open-loop mode (a fixed
// offered rate) the stamped time is the scheduled send time, not the moment
// the client got around to sending: a stalled broker then shows as latency
// instead of silently lowering the offered load (coordinated omission).
//
// Nothing here is core code: it uses real clocks, goroutines and the network.
package bench
