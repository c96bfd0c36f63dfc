package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/floe-broker/floe/jepsen/history"
)

// Validity is a checker's verdict.
type Validity string

const (
	Valid   Validity = "valid"
	Invalid Validity = "invalid"
	// Unknown: the checker could not decide (a search ran out of budget or
	// time, a needed final read is missing, the history is malformed).
	// Callers treat it as failure.
	Unknown Validity = "unknown"
)

// worse returns the worse of two verdicts: invalid, then unknown, then valid.
func worse(a, b Validity) Validity {
	rank := map[Validity]int{Valid: 0, Unknown: 1, Invalid: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Detail describes one anomaly.
type Detail struct {
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Group     string `json:"group,omitempty"`
	// Offsets and Value locate the anomaly, when it has them.
	Offsets []int64 `json:"offsets,omitempty"`
	Value   string  `json:"value,omitempty"`
	// Events are the indexes of the history events involved.
	Events []int64 `json:"events,omitempty"`
	Msg    string  `json:"msg"`
}

// Result is one checker's verdict.
type Result struct {
	Checker string   `json:"checker"`
	Valid   Validity `json:"valid"`
	// Anomalies holds up to Options.DetailsMax details per anomaly name;
	// Counts holds how many there were in all.
	Anomalies map[string][]Detail `json:"anomalies,omitempty"`
	Counts    map[string]int      `json:"counts,omitempty"`
	// Stats are figures about what was checked (operations, values...).
	Stats map[string]int64 `json:"stats,omitempty"`
	// Notes say why a verdict is unknown, or what was not checked.
	Notes []string `json:"notes,omitempty"`

	detailsMax int
}

func newResult(name string, opts Options) *Result {
	return &Result{Checker: name, Valid: Valid, detailsMax: opts.detailsMax()}
}

// add records an anomaly; it makes the result invalid.
func (r *Result) add(anomaly string, d Detail) {
	if r.Anomalies == nil {
		r.Anomalies, r.Counts = map[string][]Detail{}, map[string]int{}
	}
	r.Counts[anomaly]++
	if len(r.Anomalies[anomaly]) < r.detailsMax {
		r.Anomalies[anomaly] = append(r.Anomalies[anomaly], d)
	}
	r.Valid = Invalid
}

// unknown records why the verdict cannot be valid.
func (r *Result) unknown(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	r.Valid = worse(r.Valid, Unknown)
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *Result) stat(name string, n int64) {
	if r.Stats == nil {
		r.Stats = map[string]int64{}
	}
	r.Stats[name] += n
}

// Report is the verdict of every checker run on one history.
type Report struct {
	// Valid is the worst verdict of Results.
	Valid   Validity `json:"valid"`
	Results []Result `json:"results"`
}

// Result returns the named checker's result, if it ran.
func (rep Report) Result(checker string) (Result, bool) {
	for _, r := range rep.Results {
		if r.Checker == checker {
			return r, true
		}
	}
	return Result{}, false
}

// Summary is a human-readable account: one line per checker, then the
// first details of each anomaly.
func (rep Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "overall: %s\n", rep.Valid)
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "%-28s %-8s", r.Checker, r.Valid)
		for _, name := range sortedKeys(r.Counts) {
			fmt.Fprintf(&b, " %s=%d", name, r.Counts[name])
		}
		for _, name := range sortedKeys(r.Stats) {
			fmt.Fprintf(&b, " [%s %d]", name, r.Stats[name])
		}
		b.WriteString("\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "    note: %s\n", n)
		}
		for _, name := range sortedKeys(r.Anomalies) {
			for i, d := range r.Anomalies[name] {
				if i == 3 {
					fmt.Fprintf(&b, "    %s: ... (%d in all)\n", name, r.Counts[name])
					break
				}
				fmt.Fprintf(&b, "    %s: %s\n", name, d)
			}
		}
	}
	return b.String()
}

func (d Detail) String() string {
	var s string
	if d.Topic != "" { // details of the txn checker name no partition
		s = fmt.Sprintf("%s/%d", d.Topic, d.Partition)
	}
	if d.Group != "" {
		s = d.Group + " " + s
	}
	if len(d.Offsets) > 0 {
		s += fmt.Sprintf(" offsets %v", d.Offsets)
	}
	if d.Value != "" {
		s += fmt.Sprintf(" value %q", d.Value)
	}
	if len(d.Events) > 0 {
		s += fmt.Sprintf(" events %v", d.Events)
	}
	if s == "" {
		return d.Msg
	}
	return s + ": " + d.Msg
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func tpDetail(tp history.TP, msg string) Detail {
	return Detail{Topic: tp.Topic, Partition: tp.Partition, Msg: msg}
}
