package ui

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/node/audit"
)

// auditTopic is the internal topic of the audit log (node.AuditTopic).
const auditTopic = "__audit_log"

// auditScanMax bounds the records one audit search reads per partition
// (the newest ones before the until bound).
const auditScanMax = 20000

// auditSkew bounds how much a record's append time to __audit_log and its
// event's time differ (queued, sent in batches, resent after a failover;
// two brokers' clocks).
const auditSkew = time.Minute

type auditForm struct {
	Principal, Operation, Result, Since, Until, Limit string
}

type auditRow struct {
	Time      string
	TimeMs    int64
	Partition int32
	Offset    int64
	Class     string
	Principal string
	Operation string // the Kafka API, or the SASL step
	Action    string // the ACL operation or the change
	Resource  string
	Success   bool
	Reason    string
	Client    string
	Node      int32
	Message   string
}

type auditData struct {
	Form      auditForm
	Rows      []auditRow
	Scanned   int
	Matched   int
	Truncated bool // a partition's window was cut at auditScanMax
	Bad       int  // records that did not decode
}

// audit shows the audit log (__audit_log), newest first, filtered by
// principal, operation, result and time. It reads the topic through the
// Kafka API as the session's user: READ on __audit_log (and DESCRIBE for
// its offsets), as any consumer of it needs.
func (s *Server) audit(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	f := auditForm{Principal: strings.TrimSpace(q.Get("principal")), Operation: strings.TrimSpace(q.Get("operation")),
		Result: q.Get("result"), Since: strings.TrimSpace(q.Get("since")), Until: strings.TrimSpace(q.Get("until")), Limit: q.Get("limit")}
	if f.Result == "" {
		f.Result = "any"
	}
	if f.Limit == "" {
		f.Limit = "100"
	}
	d := auditData{Form: f}
	limit, err := parseInt("limit", f.Limit, 1, browseLimitMax)
	var since, until int64 = -1, -1
	switch {
	case err != nil:
	case f.Result != "any" && f.Result != "success" && f.Result != "failure":
		err = badf("result %q: want any, success or failure", f.Result)
	case len(f.Principal) > 1024 || len(f.Operation) > 1024:
		err = badf("filters: at most 1024 bytes each")
	}
	if err == nil && f.Since != "" {
		since, err = parseTime(f.Since)
	}
	if err == nil && f.Until != "" {
		until, err = parseTime(f.Until)
	}
	if err == nil && since >= 0 && until >= 0 && until < since {
		err = badf("until is before since")
	}
	if err == nil {
		err = s.readAudit(r, sess, &d, int(limit), since, until)
	}
	p := s.pageFor(sess, "audit", "Audit log")
	p.Data = d
	if err != nil {
		status, msg := classify(err)
		if status == http.StatusForbidden || status == http.StatusNotFound {
			if status == http.StatusNotFound {
				msg += " (is the audit log on? security.audit.enabled)"
			}
			s.fail(w, r, sess, status, "audit log: "+msg)
			return
		}
		p.Error = msg
		s.render(w, status, "audit", p)
		return
	}
	s.render(w, http.StatusOK, "audit", p)
}

// readAudit reads, per partition of __audit_log, the newest auditScanMax
// records in [since, until], keeps those the filters match, and merges
// them newest first, cut to limit.
func (s *Server) readAudit(r *http.Request, sess *session, d *auditData, limit int, since, until int64) error {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	type window struct {
		part       int32
		from, stop int64
	}
	var windows []window
	err := s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
		starts, err := adm.ListStartOffsets(ctx, auditTopic)
		if err == nil {
			err = starts.Error()
		}
		if err != nil {
			return err
		}
		ends, err := adm.ListEndOffsets(ctx, auditTopic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return err
		}
		lookup := func(ms int64) (kadm.ListedOffsets, error) {
			lo, err := adm.ListOffsetsAfterMilli(ctx, ms, auditTopic)
			if err == nil {
				err = lo.Error()
			}
			return lo, err
		}
		// The window comes from the records' Kafka timestamps: the
		// append time on the partition leader's clock, later than the
		// event's own time (on the clock of the broker that saw it),
		// which the rows are filtered on. Widened by auditSkew on both
		// sides for the delay and the two clocks.
		var afterSince, afterUntil kadm.ListedOffsets
		if since >= 0 {
			if afterSince, err = lookup(max(since-auditSkew.Milliseconds(), 0)); err != nil {
				return err
			}
		}
		if until >= 0 {
			if afterUntil, err = lookup(until + 1 + auditSkew.Milliseconds()); err != nil {
				return err
			}
		}
		for _, so := range sortedOffsets(starts) {
			eo, _ := ends.Lookup(auditTopic, so.Partition)
			w := window{part: so.Partition, from: so.Offset, stop: eo.Offset}
			if o, ok := afterUntil.Lookup(auditTopic, so.Partition); ok && o.Offset >= 0 {
				w.stop = min(w.stop, o.Offset)
			}
			lo := w.from
			if o, ok := afterSince.Lookup(auditTopic, so.Partition); ok {
				if o.Offset < 0 {
					lo = w.stop // nothing at or after since
				} else {
					lo = max(lo, o.Offset)
				}
			}
			w.from = max(lo, w.stop-auditScanMax)
			if w.from > lo {
				d.Truncated = true
			}
			windows = append(windows, w)
		}
		return nil
	})
	if err != nil {
		return err
	}
	principal, op := strings.ToLower(d.Form.Principal), strings.ToLower(d.Form.Operation)
	for _, w := range windows {
		if w.from >= w.stop {
			continue
		}
		n, err := s.readRange(ctx, sess, auditTopic, w.part, w.from, w.stop, auditScanMax, func(rec *kgo.Record) bool {
			ar, err := audit.Unmarshal(rec.Value)
			if err != nil {
				d.Bad++
				return true
			}
			row := auditRowOf(ar, rec)
			if (since >= 0 && row.TimeMs < since) || (until >= 0 && row.TimeMs > until) ||
				(principal != "" && !strings.Contains(strings.ToLower(row.Principal), principal)) ||
				(op != "" && !strings.Contains(strings.ToLower(row.Operation+" "+row.Action), op)) ||
				(d.Form.Result == "success" && !row.Success) || (d.Form.Result == "failure" && row.Success) {
				return true
			}
			d.Rows = append(d.Rows, row)
			return true
		})
		d.Scanned += n
		if err != nil {
			return err
		}
	}
	d.Matched = len(d.Rows)
	sort.SliceStable(d.Rows, func(i, j int) bool {
		a, b := d.Rows[i], d.Rows[j]
		if a.TimeMs != b.TimeMs {
			return a.TimeMs > b.TimeMs
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Offset > b.Offset
	})
	if len(d.Rows) > limit {
		d.Rows = d.Rows[:limit]
	}
	return nil
}

func auditRowOf(ar audit.Record, rec *kgo.Record) auditRow {
	row := auditRow{TimeMs: ar.Time, Time: time.UnixMilli(ar.Time).UTC().Format("2006-01-02 15:04:05.000"),
		Partition: rec.Partition, Offset: rec.Offset, Class: ar.ClassName, Principal: ar.Actor.User.Name,
		Action: ar.Unmapped.Floe.Action, Success: ar.Status == "Success", Reason: ar.StatusDetail,
		Node: ar.Unmapped.Floe.Node, Message: ar.Message}
	if ar.API != nil {
		row.Operation = ar.API.Operation
	} else if ar.AuthProtocol != "" {
		row.Operation = ar.AuthProtocol
	}
	var res []string
	for _, x := range ar.Resources {
		res = append(res, x.Type+" "+x.Name)
	}
	row.Resource = strings.Join(res, ", ")
	if ip := ar.SrcEndpoint.IP; ip != "" {
		row.Client = ip
		if ar.SrcEndpoint.Port != 0 {
			row.Client += ":" + strconv.Itoa(ar.SrcEndpoint.Port)
		}
	}
	return row
}
