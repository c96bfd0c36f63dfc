package bench

import (
	"fmt"
	"io"
	"strings"
)

// Result is one benchmark run, printed as text or JSON (--json) for
// scripts/bench/report. MB is 10^6 bytes of message values (keys, headers
// and protocol overhead are not counted).
type Result struct {
	// Tool is "kafka" (any Kafka-protocol broker) or "nats" (JetStream).
	Tool string `json:"tool"`
	// Mode is produce, consume or e2e.
	Mode  string `json:"mode"`
	Label string `json:"label,omitempty"`
	// Offered is the open-loop target rate in msg/s; 0 for closed loop
	// (as fast as the broker acknowledges).
	OfferedPerSec float64      `json:"offered_msgs_per_sec"`
	MessageBytes  int          `json:"message_bytes"`
	Kafka         *KafkaConfig `json:"kafka,omitempty"`
	NATS          *NATSConfig  `json:"nats,omitempty"`
	// Produce and Consume are nil for the side a mode does not run.
	Produce *Side `json:"produce,omitempty"`
	Consume *Side `json:"consume,omitempty"`
	// BrokerStages is the brokers' breakdown of produce requests over the
	// measured part of the run (KafkaConfig.BrokerMetrics); StagesError
	// says why it is missing when it was asked for.
	BrokerStages []StageLatency `json:"broker_stages,omitempty"`
	StagesError  string         `json:"broker_stages_error,omitempty"`
	// ClientStages is the producer client's own share (client_stages.go):
	// the open-loop send lag and the produce requests' wait and round trip.
	ClientStages []StageLatency `json:"client_stages,omitempty"`
}

// Side is the measurement of producing or of consuming. Messages and the
// latency histogram cover only messages sent after the warmup; the rates
// divide them by the time from the end of the warmup to the last one.
type Side struct {
	Messages   int64    `json:"messages"`
	Bytes      int64    `json:"bytes"`
	ElapsedSec float64  `json:"elapsed_sec"`
	MsgsPerSec float64  `json:"msgs_per_sec"`
	MBPerSec   float64  `json:"mb_per_sec"`
	Errors     int64    `json:"errors"`
	FirstError string   `json:"first_error,omitempty"`
	Latency    *Latency `json:"latency,omitempty"`
}

// Latency summarizes a histogram of nanoseconds in milliseconds.
type Latency struct {
	Count  int64   `json:"count"`
	P50Ms  float64 `json:"p50_ms"`
	P95Ms  float64 `json:"p95_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

func summarize(h *Histogram) *Latency {
	if h.Count() == 0 {
		return nil
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return &Latency{
		Count: h.Count(),
		P50Ms: ms(h.ValueAt(50)), P95Ms: ms(h.ValueAt(95)), P99Ms: ms(h.ValueAt(99)),
		P999Ms: ms(h.ValueAt(99.9)), MaxMs: ms(h.Max()), MeanMs: h.Mean() / 1e6,
	}
}

// Err returns an error when the run did not measure what it was asked to:
// any produce or consume errors, or nothing measured at all. The command
// exits non-zero on it, after printing the result.
func (r *Result) Err() error {
	var problems []string
	for _, s := range []struct {
		name string
		side *Side
	}{{"produce", r.Produce}, {"consume", r.Consume}} {
		if s.side == nil {
			continue
		}
		if s.side.Errors > 0 {
			problems = append(problems, fmt.Sprintf("%d %s errors (first: %s)", s.side.Errors, s.name, s.side.FirstError))
		}
		if s.side.Messages == 0 {
			problems = append(problems, "no messages "+map[string]string{"produce": "acknowledged", "consume": "consumed"}[s.name]+" after the warmup")
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

// WriteText prints the human form of r.
func (r *Result) WriteText(w io.Writer) {
	title := r.Tool + " " + r.Mode
	if r.Label != "" {
		title += " (" + r.Label + ")"
	}
	load := "closed loop"
	if r.OfferedPerSec > 0 {
		load = "offered " + FormatCount(r.OfferedPerSec) + " msg/s"
	}
	fmt.Fprintf(w, "%s: %d-byte messages, %s\n", title, r.MessageBytes, load)
	writeSide(w, "produce", "ack latency", r.Produce)
	writeSide(w, "consume", "end-to-end latency", r.Consume)
	writeStages(w, "client stages (ms)", r.ClientStages)
	writeStages(w, "broker stages (floe_produce_stage_seconds, ms)", r.BrokerStages)
	if r.StagesError != "" {
		fmt.Fprintf(w, "  broker stages: %s\n", r.StagesError)
	}
}

func writeSide(w io.Writer, name, latencyName string, s *Side) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "  %-8s %s msgs in %.2fs: %s msg/s, %.2f MB/s, %d errors\n",
		name, FormatCount(float64(s.Messages)), s.ElapsedSec, FormatCount(s.MsgsPerSec), s.MBPerSec, s.Errors)
	if s.FirstError != "" {
		fmt.Fprintf(w, "           first error: %s\n", s.FirstError)
	}
	if l := s.Latency; l != nil {
		fmt.Fprintf(w, "           %s ms: p50 %s  p95 %s  p99 %s  p99.9 %s  max %s  mean %s\n", latencyName,
			FormatMs(l.P50Ms), FormatMs(l.P95Ms), FormatMs(l.P99Ms), FormatMs(l.P999Ms), FormatMs(l.MaxMs), FormatMs(l.MeanMs))
	}
}

// FormatCount prints 1234567 as "1,234,567" (rounded to an integer).
func FormatCount(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatMs prints a millisecond figure with three significant digits.
func FormatMs(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2f", ms)
	default:
		return fmt.Sprintf("%.3f", ms)
	}
}
