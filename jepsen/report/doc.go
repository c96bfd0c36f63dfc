// Package report writes what a Docker-suite run leaves behind: the nemesis
// timeline, the checker results (JSON and a text summary) and a PNG plot
// of throughput and latency over time with the fault windows shaded, and
// the availability figures (avail.go: produces acknowledged within 1 s
// inside and outside fault windows, the longest gap per partition).
package report
