package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

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
	DeadLetterTopic       string   // errors.deadletterqueue.topic.name, "" none or unknown
	Topics                []string // topics with share state, for the forms
	Reset                 resetForm
	DeleteTopic           string
}

// shareGroup shows a share group (KIP-932): members, their subscriptions
// and assignment, and the share-partition start offset and lag.
func (s *Server) shareGroup(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("group")
	d, err := s.loadShareGroup(r, sess, name)
	if err != nil {
		s.shareFail(w, r, sess, name, err)
		return
	}
	d.Reset = resetForm{To: "earliest"}
	if len(d.Topics) > 0 {
		d.Reset.Topic, d.DeleteTopic = d.Topics[0], d.Topics[0]
	}
	p := s.pageFor(sess, "groups", "Share group "+name)
	p.Notice = shareNotices[r.URL.Query().Get("done")]
	p.Data = d
	s.render(w, http.StatusOK, "share", p)
}

func (s *Server) shareFail(w http.ResponseWriter, r *http.Request, sess *session, name string, err error) {
	if isNoGroup(err) {
		s.fail(w, r, sess, http.StatusNotFound, err.Error())
		return
	}
	s.failErr(w, r, sess, "share group "+name, err)
}

// loadShareGroup describes a share group, its offsets and lag.
func (s *Server) loadShareGroup(r *http.Request, sess *session, name string) (*shareData, error) {
	if err := checkGroupName(name); err != nil {
		return nil, err
	}
	d := &shareData{Name: name}
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
		for _, o := range d.Offsets {
			if len(d.Topics) == 0 || d.Topics[len(d.Topics)-1] != o.Topic {
				d.Topics = append(d.Topics, o.Topic)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

var shareNotices = map[string]string{"reset": "Start offsets reset.", "deleted": "Share-group offsets deleted."}

// resetShareOffsets sets the start offset of an empty share group's
// share-partitions (AlterShareGroupOffsets): to the earliest or latest
// offset, or a given one, of one partition or every one of a topic. The
// broker refuses it (NON_EMPTY_GROUP, 409 here) while the group has
// members, as Kafka does; it needs READ on the group and the topic.
func (s *Server) resetShareOffsets(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("group")
	f, part, offset, err := readResetForm(r, name)
	if err == nil {
		err = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
			os, err := resetTargets(ctx, adm, f, part, offset)
			if err != nil {
				return err
			}
			res, err := adm.AlterShareGroupOffsets(ctx, name, os)
			if err != nil {
				return err
			}
			return res.Error()
		})
	}
	s.shareDone(w, r, sess, name, err, "resetting start offsets", "reset", func(d *shareData) { d.Reset = f })
}

// deleteShareOffsets forgets an empty share group's state on a topic
// (DeleteShareGroupOffsets): its next fetch starts the topic again per
// share.auto.offset.reset. It needs DELETE on the group, READ on the
// topic.
func (s *Server) deleteShareOffsets(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("group")
	topic := strings.TrimSpace(r.PostFormValue("topic"))
	err := checkGroupName(name)
	if err == nil {
		err = checkTopicName(topic)
	}
	if err == nil {
		err = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
			res, err := adm.DeleteShareGroupOffsets(ctx, name, topic)
			if err != nil {
				return err
			}
			return res.Error()
		})
	}
	s.shareDone(w, r, sess, name, err, "deleting offsets of "+topic, "deleted", func(d *shareData) { d.DeleteTopic = topic })
}

// shareDone answers a share-group change: a redirect with its notice, or
// the page again with the error (and the form as typed).
func (s *Server) shareDone(w http.ResponseWriter, r *http.Request, sess *session, name string, err error, what, done string, keep func(*shareData)) {
	if err == nil {
		http.Redirect(w, r, "/share-groups/"+url.PathEscape(name)+"?done="+done, http.StatusSeeOther)
		return
	}
	status, msg := classify(err)
	if status == http.StatusUnauthorized {
		s.failErr(w, r, sess, what, err)
		return
	}
	d, lerr := s.loadShareGroup(r, sess, name)
	if lerr != nil {
		s.fail(w, r, sess, status, what+" of "+name+": "+msg)
		return
	}
	d.Reset = resetForm{To: "earliest"}
	keep(d)
	p := s.pageFor(sess, "groups", "Share group "+name)
	p.Data, p.Error = d, what+": "+msg
	s.render(w, status, "share", p)
}
