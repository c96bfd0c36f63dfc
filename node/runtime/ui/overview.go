package ui

import (
	"context"
	"net/http"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

type partitionRef struct {
	Topic     string
	Partition int32
	Leader    int32
	Replicas  []int32
	ISR       []int32
}

type overviewData struct {
	ClusterID        string
	Controller       int32
	Brokers          []kadm.BrokerDetail
	Topics           int
	Partitions       int
	UnderReplicated  []partitionRef
	Offline          []partitionRef
	Healthy          bool
	HealthWhy        []string
	HiddenByACLsNote bool
}

// overview is the landing page: the cluster as a Metadata request shows
// it to this session (topics the session may not describe are not in it).
func (s *Server) overview(w http.ResponseWriter, r *http.Request, sess *session) {
	var d overviewData
	err := s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
		m, err := adm.Metadata(ctx)
		if err != nil {
			return err
		}
		d.ClusterID, d.Controller, d.Brokers = m.Cluster, m.Controller, m.Brokers
		sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].NodeID < d.Brokers[j].NodeID })
		for _, t := range m.Topics.Sorted() {
			d.Topics++
			for _, p := range t.Partitions.Sorted() {
				d.Partitions++
				ref := partitionRef{Topic: t.Topic, Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR}
				if p.Leader < 0 {
					d.Offline = append(d.Offline, ref)
				} else if len(p.ISR) < len(p.Replicas) {
					d.UnderReplicated = append(d.UnderReplicated, ref)
				}
			}
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, sess, "cluster metadata", err)
		return
	}
	if d.Controller < 0 {
		d.HealthWhy = append(d.HealthWhy, "no controller is known")
	}
	if len(d.Offline) > 0 {
		d.HealthWhy = append(d.HealthWhy, plural(len(d.Offline), "partition has", "partitions have")+" no leader")
	}
	if len(d.UnderReplicated) > 0 {
		d.HealthWhy = append(d.HealthWhy, plural(len(d.UnderReplicated), "partition is", "partitions are")+" under-replicated")
	}
	d.Healthy = len(d.HealthWhy) == 0
	d.HiddenByACLsNote = s.cfg.SASLMechanism != ""
	p := s.pageFor(sess, "overview", "Overview")
	p.Data = d
	s.render(w, http.StatusOK, "overview", p)
}
