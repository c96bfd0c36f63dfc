// Command report turns the raw results of scripts/bench/run.sh (one
// `floe bench --json` object a line) into the "Broker benchmarks" section of
// docs/benchmarks.md and its PNG plots. It rewrites only its own section,
// between marker comments, so other sections of the file stay as they are.
//
//	report summary < result.json          one line per result, for the log
//	report maxrate --results F --label L  measured msg/s of run L, an integer
//	report write --results F ...          the section and the plots
package main
