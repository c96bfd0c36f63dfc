package ui

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	browseLimitMax = 500
	// browseScanMax bounds the records one browse reads looking for key
	// matches, so a filter that matches nothing ends.
	browseScanMax = 10000
	// displayBytesMax bounds one shown key, value or header.
	displayBytesMax = 64 << 10
)

type browseForm struct {
	Partition, From, Offset, Time, Key, Limit, Format string
}

type shownBytes struct {
	Format string // json, text, hex or null
	Text   string
	Size   int
}

type shownHeader struct {
	Key   string
	Value shownBytes
}

type shownRecord struct {
	Partition int32
	Offset    int64
	Timestamp string
	Key       shownBytes
	Value     shownBytes
	Headers   []shownHeader
}

type browseData struct {
	Topic      string
	Form       browseForm
	Partitions []int32
	Start, End int64
	StartAt    int64
	Scanned    int
	Records    []shownRecord
	Searched   bool
	Truncated  bool
}

// browse reads records of one partition from an offset, a timestamp or
// the newest ones, keeping those whose key contains the filter.
func (s *Server) browse(w http.ResponseWriter, r *http.Request, sess *session) {
	s.browseAs(w, r, sess, "messages", "topics", "Messages of ")
}

// browseAs is browse rendered with template tmpl (the message browser, or
// the dead-letter browser), under nav, titled title and the topic.
func (s *Server) browseAs(w http.ResponseWriter, r *http.Request, sess *session, tmpl, nav, title string) {
	q := r.URL.Query()
	f := browseForm{Partition: q.Get("partition"), From: q.Get("from"), Offset: q.Get("offset"), Time: q.Get("time"),
		Key: q.Get("key"), Limit: q.Get("limit"), Format: q.Get("format")}
	if f.Partition == "" {
		f.Partition = "0"
	}
	if f.From == "" {
		f.From = "newest"
	}
	if f.Limit == "" {
		f.Limit = "20"
	}
	if f.Format == "" {
		f.Format = "auto"
	}
	d := browseData{Topic: r.PathValue("topic"), Form: f, Searched: q.Has("partition")}
	err := checkTopicName(d.Topic)
	var part, limit int64
	if err == nil {
		part, err = parseInt("partition", f.Partition, 0, 1<<31-1)
	}
	if err == nil {
		limit, err = parseInt("limit", f.Limit, 1, browseLimitMax)
	}
	if err == nil && f.Format != "auto" && f.Format != "json" && f.Format != "text" && f.Format != "hex" {
		err = badf("format %q: want auto, json, text or hex", f.Format)
	}
	if err == nil && len(f.Key) > 1024 {
		err = badf("key filter: at most 1024 bytes")
	}
	if err == nil {
		err = s.readRecords(r, sess, &d, int32(part), int(limit))
	}
	p := s.pageFor(sess, nav, title+d.Topic)
	p.Data = d
	if err != nil {
		status, msg := classify(err)
		if status == http.StatusForbidden || status == http.StatusNotFound {
			s.fail(w, r, sess, status, strings.ToLower(title)+d.Topic+": "+msg)
			return
		}
		p.Error = msg
		s.render(w, status, tmpl, p)
		return
	}
	s.render(w, http.StatusOK, tmpl, p)
}

// readRecords finds the start offset, then consumes from it.
func (s *Server) readRecords(r *http.Request, sess *session, d *browseData, part int32, limit int) error {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	cl, err := s.client(sess)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, d.Topic)
	if err != nil {
		return err
	}
	if err := starts.Error(); err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, d.Topic)
	if err != nil {
		return err
	}
	if err := ends.Error(); err != nil {
		return err
	}
	for _, so := range sortedOffsets(starts) {
		d.Partitions = append(d.Partitions, so.Partition)
	}
	so, ok1 := starts.Lookup(d.Topic, part)
	eo, ok2 := ends.Lookup(d.Topic, part)
	if !ok1 || !ok2 {
		return badf("topic %s has no partition %d", d.Topic, part)
	}
	d.Start, d.End = so.Offset, eo.Offset
	window := limit // records read from StartAt
	switch d.Form.From {
	case "newest":
		if d.Form.Key != "" {
			window = browseScanMax
		}
		d.StartAt = max(d.Start, d.End-int64(window))
	case "offset":
		o, err := parseInt("offset", d.Form.Offset, 0, 1<<62)
		if err != nil {
			return err
		}
		d.StartAt = min(max(o, d.Start), d.End)
		window = browseScanMax
	case "timestamp":
		ms, err := parseTime(d.Form.Time)
		if err != nil {
			return err
		}
		lo, err := adm.ListOffsetsAfterMilli(ctx, ms, d.Topic)
		if err != nil {
			return err
		}
		d.StartAt = d.End
		if o, ok := lo.Lookup(d.Topic, part); ok && o.Err == nil && o.Offset >= 0 {
			d.StartAt = max(o.Offset, d.Start)
		}
		window = browseScanMax
	default:
		return badf("from %q: want newest, offset or timestamp", d.Form.From)
	}
	if d.StartAt >= d.End {
		return nil
	}
	return s.consume(ctx, sess, d, part, limit, min(d.End, d.StartAt+int64(window)))
}

// consume reads [d.StartAt, stop) of one partition, keeping key matches.
// With the newest records asked for, it keeps the last limit matches.
func (s *Server) consume(ctx context.Context, sess *session, d *browseData, part int32, limit int, stop int64) error {
	filter := []byte(d.Form.Key)
	newest := d.Form.From == "newest"
	n, err := s.readRange(ctx, sess, d.Topic, part, d.StartAt, stop, browseScanMax, func(rec *kgo.Record) bool {
		if len(filter) > 0 && !bytes.Contains(rec.Key, filter) {
			return true
		}
		d.Records = append(d.Records, showRecord(rec, d.Form.Format))
		return newest || len(d.Records) < limit
	})
	d.Scanned = n
	if err != nil {
		return err
	}
	if newest && len(d.Records) > limit {
		d.Records = d.Records[len(d.Records)-limit:]
	}
	d.Truncated = d.Scanned >= browseScanMax
	return nil
}

// readRange reads [from, stop) of one partition with a client of its own
// (a consuming client is configured at birth), handing each record to
// each in offset order until each says stop (false), scanMax records were
// read, or nothing more arrives. It returns the records read.
func (s *Server) readRange(ctx context.Context, sess *session, topic string, part int32, from, stop int64, scanMax int,
	each func(*kgo.Record) bool) (int, error) {
	cl, err := s.client(sess, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {part: kgo.NewOffset().At(from)}}), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	next, scanned, done := from, 0, false
	for next < stop && scanned < scanMax && !done {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return scanned, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if err != context.DeadlineExceeded && ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return scanned, ferr
		}
		n := 0
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			if rec.Offset >= stop {
				next = stop
				return
			}
			if done || scanned >= scanMax {
				return
			}
			next = rec.Offset + 1
			scanned++
			done = !each(rec)
		})
		if n == 0 {
			break // nothing more arrives before stop: gaps (control records) end it
		}
	}
	return scanned, nil
}

// parseTime accepts Unix milliseconds, RFC 3339, or a datetime-local
// value (2006-01-02T15:04[:05], UTC).
func parseTime(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, badf("timestamp %q: want Unix milliseconds, RFC 3339 or YYYY-MM-DDTHH:MM (UTC)", v)
}

func showRecord(rec *kgo.Record, format string) shownRecord {
	sr := shownRecord{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UTC().Format("2006-01-02 15:04:05.000"),
		Key: show(rec.Key, "auto"), Value: show(rec.Value, format)}
	for _, h := range rec.Headers {
		sr.Headers = append(sr.Headers, shownHeader{Key: h.Key, Value: show(h.Value, "auto")})
	}
	return sr
}

// show renders bytes as JSON (indented), text or a hex dump: auto picks
// JSON for an object or array, text for printable UTF-8, hex otherwise.
func show(b []byte, format string) shownBytes {
	if b == nil {
		return shownBytes{Format: "null", Text: "null"}
	}
	out := shownBytes{Size: len(b)}
	cut := b
	if len(cut) > displayBytesMax {
		cut = cut[:displayBytesMax]
	}
	if format == "auto" {
		t := bytes.TrimSpace(b)
		switch {
		case len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t):
			format = "json"
		case printable(cut):
			format = "text"
		default:
			format = "hex"
		}
	}
	switch format {
	case "json":
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil && buf.Len() <= displayBytesMax {
			out.Format, out.Text = "json", buf.String()
			return out
		}
		out.Format, out.Text = "hex", "(not valid JSON, shown as hex)\n"+hex.Dump(cut)
	case "text":
		out.Format, out.Text = "text", strings.ToValidUTF8(string(cut), "\uFFFD")
	default:
		out.Format, out.Text = "hex", hex.Dump(cut)
	}
	if len(b) > displayBytesMax {
		out.Text += "\n… (" + strconv.Itoa(len(b)-displayBytesMax) + " more bytes)"
	}
	return out
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

type produceForm struct {
	Topic, Partition, Key, Value, Headers string
}

type produceData struct {
	Form   produceForm
	Topics []string
	Done   *shownRecord
	Link   string
}

func (s *Server) produceForm(w http.ResponseWriter, r *http.Request, sess *session) {
	d := produceData{Form: produceForm{Topic: r.URL.Query().Get("topic")}}
	s.renderProduce(w, r, sess, http.StatusOK, "", &d)
}

func (s *Server) renderProduce(w http.ResponseWriter, r *http.Request, sess *session, status int, errMsg string, d *produceData) {
	// The topic list is a convenience: without it the field still works.
	_ = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
		td, err := adm.ListTopics(ctx)
		d.Topics = td.Names()
		return err
	})
	p := s.pageFor(sess, "produce", "Produce")
	p.Data, p.Error = d, errMsg
	s.render(w, status, "produce", p)
}

// parseHeaders parses "name: value" lines.
func parseHeaders(text string) ([]kgo.RecordHeader, error) {
	var hs []kgo.RecordHeader
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, badf("headers line %d: want name: value", i+1)
		}
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(strings.TrimPrefix(v, " "))})
	}
	return hs, nil
}

// produce writes one record (acks=all) and shows where it landed.
func (s *Server) produce(w http.ResponseWriter, r *http.Request, sess *session) {
	f := produceForm{Topic: strings.TrimSpace(r.PostFormValue("topic")), Partition: strings.TrimSpace(r.PostFormValue("partition")),
		Key: r.PostFormValue("key"), Value: r.PostFormValue("value"), Headers: r.PostFormValue("headers")}
	d := &produceData{Form: f}
	rec := &kgo.Record{Topic: f.Topic, Value: []byte(f.Value)}
	if f.Key != "" {
		rec.Key = []byte(f.Key)
	}
	err := checkTopicName(f.Topic)
	var opts []kgo.Opt
	if err == nil && f.Partition != "" {
		var p int64
		p, err = parseInt("partition", f.Partition, 0, 1<<31-1)
		rec.Partition = int32(p)
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if err == nil {
		rec.Headers, err = parseHeaders(f.Headers)
	}
	if err == nil {
		err = s.produceOne(r, sess, rec, opts)
	}
	if err != nil {
		status, msg := classify(err)
		s.renderProduce(w, r, sess, status, "producing to "+f.Topic+": "+msg, d)
		return
	}
	sr := showRecord(rec, "auto")
	d.Done = &sr
	d.Link = "/topics/" + rec.Topic + "/messages?partition=" + strconv.Itoa(int(rec.Partition)) +
		"&from=offset&offset=" + strconv.FormatInt(rec.Offset, 10) + "&limit=1"
	d.Form.Value, d.Form.Key = "", ""
	s.renderProduce(w, r, sess, http.StatusOK, "", d)
}

func (s *Server) produceOne(r *http.Request, sess *session, rec *kgo.Record, opts []kgo.Opt) error {
	cl, err := s.client(sess, append(opts, kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	return cl.ProduceSync(ctx, rec).FirstErr()
}
