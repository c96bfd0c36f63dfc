package ui

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups' dead-letter topics (KIP-1191; node/share_dlq.go): a group
// names its topic in the group config errors.deadletterqueue.topic.name,
// and the topic's name starts with dlq. (the default
// errors.deadletterqueue.topic.name.prefix). The broker's copy of a record
// carries these headers beside the record's own.
const (
	dlqConfig          = "errors.deadletterqueue.topic.name"
	dlqPrefix          = "dlq."
	dlqHeaderTopic     = "__dlq.errors.topic"
	dlqHeaderPartition = "__dlq.errors.partition"
	dlqHeaderOffset    = "__dlq.errors.offset"
	dlqHeaderGroup     = "__dlq.errors.group.id"
	dlqHeaderCount     = "__dlq.errors.delivery.count"
	dlqHeaderReason    = "__dlq.errors.reason"
	dlqHeaderTime      = "__dlq.errors.timestamp"
)

type dlqGroupRow struct {
	Group, Topic, Err string
}

type dlqTopicRow struct {
	Topic      string
	Partitions int
	Records    int64 // end minus start offsets, summed; -1 unknown
	Groups     []string
	Err        string
}

type dlqListData struct {
	Groups   []dlqGroupRow
	Topics   []dlqTopicRow
	GroupErr string
}

// deadLetterTopics lists the share groups with their dead-letter topic
// (from the group configs, which need DESCRIBE_CONFIGS on the group) and
// the dead-letter topics this session may describe: those the groups name
// and those named with the dlq. prefix.
func (s *Server) deadLetterTopics(w http.ResponseWriter, r *http.Request, sess *session) {
	var d dlqListData
	err := s.kafka(r, sess, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
		lg, err := adm.ListGroups(ctx)
		if err != nil {
			return err
		}
		var shares []string
		for _, g := range lg.Sorted() {
			if g.GroupType == "share" {
				shares = append(shares, g.Group)
			}
		}
		byTopic := map[string][]string{}
		if len(shares) > 0 {
			rows, err := groupDeadLetterTopics(ctx, cl, shares)
			if err != nil {
				_, d.GroupErr = classify(err)
			}
			for _, row := range rows {
				if row.Topic != "" {
					byTopic[row.Topic] = append(byTopic[row.Topic], row.Group)
				}
			}
			d.Groups = rows
		}
		td, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		names := map[string]bool{}
		for t := range byTopic {
			names[t] = true
		}
		for _, t := range td.Names() {
			if strings.HasPrefix(t, dlqPrefix) {
				names[t] = true
			}
		}
		var list []string
		for t := range names {
			list = append(list, t)
		}
		sort.Strings(list)
		if len(list) == 0 {
			return nil
		}
		starts, serr := adm.ListStartOffsets(ctx, list...)
		ends, eerr := adm.ListEndOffsets(ctx, list...)
		for _, t := range list {
			row := dlqTopicRow{Topic: t, Groups: byTopic[t], Records: -1}
			sort.Strings(row.Groups)
			detail, ok := td[t]
			switch {
			case !ok:
				row.Err = "not created yet, or you may not describe it"
			case detail.Err != nil:
				_, row.Err = classify(detail.Err)
			case serr != nil || eerr != nil:
				_, row.Err = classify(firstErr(serr, eerr))
			default:
				row.Partitions, row.Records = len(detail.Partitions), 0
				for p := range detail.Partitions {
					so, ok1 := starts.Lookup(t, p)
					eo, ok2 := ends.Lookup(t, p)
					if !ok1 || !ok2 || so.Err != nil || eo.Err != nil {
						row.Records = -1
						break
					}
					row.Records += eo.Offset - so.Offset
				}
			}
			d.Topics = append(d.Topics, row)
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, sess, "dead letters", err)
		return
	}
	p := s.pageFor(sess, "dlq", "Dead letters")
	p.Data = d
	s.render(w, http.StatusOK, "dlqs", p)
}

// groupDeadLetterTopics reads the dead-letter topic of each group from
// its group config; a group whose config is refused gets its error.
func groupDeadLetterTopics(ctx context.Context, cl *kgo.Client, groups []string) ([]dlqGroupRow, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, g := range groups {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, g, []string{dlqConfig}
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var rows []dlqGroupRow
	for _, res := range resp.Resources {
		row := dlqGroupRow{Group: res.ResourceName}
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			_, row.Err = classify(err)
		}
		for _, c := range res.Configs {
			if c.Name == dlqConfig && c.Value != nil {
				row.Topic = *c.Value
			}
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Group < rows[j].Group })
	return rows, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// deadLetters browses a dead-letter topic with the message browser,
// showing each copy's dead-letter headers as columns.
func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request, sess *session) {
	s.browseAs(w, r, sess, "dlq", "dlq", "Dead letters in ")
}

// dlqInfo is a dead-letter copy's headers, read for display.
type dlqInfo struct {
	Topic, Partition, Offset, Group, Count, Reason, Time string
	Source                                               string // a link to the original record, "" when the headers do not say
	Other                                                []shownHeader
}

// dlqOf splits a shown record's headers into the dead-letter ones and the
// record's own.
func dlqOf(sr shownRecord) dlqInfo {
	var d dlqInfo
	cols := map[string]*string{dlqHeaderTopic: &d.Topic, dlqHeaderPartition: &d.Partition, dlqHeaderOffset: &d.Offset,
		dlqHeaderGroup: &d.Group, dlqHeaderCount: &d.Count, dlqHeaderReason: &d.Reason, dlqHeaderTime: &d.Time}
	for _, h := range sr.Headers {
		if col, ok := cols[h.Key]; ok {
			*col = h.Value.Text
		} else {
			d.Other = append(d.Other, h)
		}
	}
	// The time is shown as a UTC date when it parses (it is Unix ms), else
	// as sent.
	if ms, err := parseTime(d.Time); err == nil {
		d.Time = time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
	}
	if checkTopicName(d.Topic) == nil && d.Partition != "" && d.Offset != "" {
		d.Source = "/topics/" + url.PathEscape(d.Topic) + "/messages?" + url.Values{"partition": {d.Partition},
			"from": {"offset"}, "offset": {d.Offset}, "limit": {"1"}}.Encode()
	}
	return d
}
