package ui

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type shareMemberRow struct {
	MemberID, ClientID, ClientHost, Rack string
	Epoch                                int32
	Subscribed                           []string
	Assigned                             []string
}

type shareOffsetRow struct {
	Topic       string
	Partition   int32
	StartOffset int64
	Lag         int64
	Err         string
}

type shareData struct {
	Name, State, Assignor string
	Epoch                 int32
	Coordinator           int32
	Members               []shareMemberRow
	Offsets               []shareOffsetRow
	OffsetsErr            string
	TotalLag              int64
	DeadLetterTopic       string // errors.deadletterqueue.topic.name, "" none or unknown
}

// shareGroup shows a share group (KIP-932): members, their subscriptions
// and assignment, and the share-partition start offset and lag.
func (s *Server) shareGroup(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("group")
	if err := checkGroupName(name); err != nil {
		s.failErr(w, r, sess, "share group", err)
		return
	}
	d := shareData{Name: name}
	err := s.kafka(r, sess, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
		dg, err := adm.DescribeShareGroups(ctx, name)
		if err != nil {
			return err
		}
		g, ok := dg[name]
		if !ok {
			return fmt.Errorf("share group %s: %w", name, errNoGroup)
		}
		if g.Err != nil {
			return g.Err
		}
		d.State, d.Assignor, d.Epoch, d.Coordinator = g.GroupState, g.Assignor, g.GroupEpoch, g.Coordinator.NodeID
		for _, m := range g.Members {
			row := shareMemberRow{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Epoch: m.MemberEpoch,
				Subscribed: append([]string(nil), m.SubscribedTopicNames...)}
			if m.RackID != nil {
				row.Rack = *m.RackID
			}
			sort.Strings(row.Subscribed)
			for _, tp := range m.Assignment.Sorted() {
				row.Assigned = append(row.Assigned, fmt.Sprintf("%s: %v", tp.Topic, tp.Partitions))
			}
			d.Members = append(d.Members, row)
		}
		// The dead-letter topic is a convenience: without DESCRIBE_CONFIGS
		// on the group the page shows none.
		if rows, err := groupDeadLetterTopics(ctx, cl, []string{name}); err == nil && len(rows) == 1 {
			d.DeadLetterTopic = rows[0].Topic
		}
		offs, err := adm.DescribeShareGroupOffsets(ctx, name)
		if err == nil {
			if o := offs[name]; o.Err != nil {
				err = o.Err
			} else {
				o.Offsets.Each(func(so kadm.ShareOffset) {
					row := shareOffsetRow{Topic: so.Topic, Partition: so.Partition, StartOffset: so.StartOffset, Lag: so.Lag}
					if so.Err != nil {
						row.Err = so.Err.Error()
					}
					if so.Lag > 0 {
						d.TotalLag += so.Lag
					}
					d.Offsets = append(d.Offsets, row)
				})
			}
		}
		if err != nil {
			_, d.OffsetsErr = classify(err)
		}
		sort.Slice(d.Offsets, func(i, j int) bool {
			if d.Offsets[i].Topic != d.Offsets[j].Topic {
				return d.Offsets[i].Topic < d.Offsets[j].Topic
			}
			return d.Offsets[i].Partition < d.Offsets[j].Partition
		})
		return nil
	})
	if err != nil {
		if isNoGroup(err) {
			s.fail(w, r, sess, http.StatusNotFound, err.Error())
			return
		}
		s.failErr(w, r, sess, "share group "+name, err)
		return
	}
	p := s.pageFor(sess, "groups", "Share group "+name)
	p.Data = d
	s.render(w, http.StatusOK, "share", p)
}
