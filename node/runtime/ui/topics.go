package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type topicRow struct {
	Name            string
	Partitions      int
	Replication     int
	UnderReplicated int
	Offline         int
	Internal        bool
	Err             string
}

type topicsData struct {
	Topics       []topicRow
	ShowInternal bool
	Form         createForm
}

type createForm struct {
	Name, Partitions, Replication, Configs string
}

// topics lists the topics this session may describe, with the create form.
func (s *Server) topics(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderTopics(w, r, sess, http.StatusOK, "", "", createForm{Partitions: "1", Replication: "1"})
}

func (s *Server) renderTopics(w http.ResponseWriter, r *http.Request, sess *session, status int, errMsg, notice string, form createForm) {
	d := topicsData{ShowInternal: r.URL.Query().Get("internal") == "1", Form: form}
	err := s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
		var td kadm.TopicDetails
		var err error
		if d.ShowInternal {
			td, err = adm.ListTopicsWithInternal(ctx)
		} else {
			td, err = adm.ListTopics(ctx)
		}
		if err != nil {
			return err
		}
		for _, t := range td.Sorted() {
			row := topicRow{Name: t.Topic, Partitions: len(t.Partitions), Internal: t.IsInternal}
			if t.Err != nil {
				row.Err = t.Err.Error()
			}
			for _, p := range t.Partitions {
				row.Replication = max(row.Replication, len(p.Replicas))
				if p.Leader < 0 {
					row.Offline++
				} else if len(p.ISR) < len(p.Replicas) {
					row.UnderReplicated++
				}
			}
			d.Topics = append(d.Topics, row)
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, sess, "listing topics", err)
		return
	}
	p := s.pageFor(sess, "topics", "Topics")
	p.Data, p.Error, p.Notice = d, errMsg, notice
	s.render(w, status, "topics", p)
}

var topicNameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// checkTopicName applies Kafka's topic name rule before any request.
func checkTopicName(name string) error {
	if !topicNameRE.MatchString(name) || name == "." || name == ".." {
		return badf("topic name %q: use 1 to 249 of a-z A-Z 0-9 . _ - (not . or ..)", name)
	}
	return nil
}

// parseInt parses a form number within [lo, hi].
func parseInt(field, v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badf("%s: want a whole number from %d to %d, got %q", field, lo, hi, v)
	}
	return n, nil
}

// parseConfigs parses "key=value" lines (blank lines skipped).
func parseConfigs(text string) (map[string]*string, error) {
	out := map[string]*string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, badf("configs line %d: want key=value", i+1)
		}
		if _, dup := out[k]; dup {
			return nil, badf("configs line %d: %s given twice", i+1, k)
		}
		out[k] = &v
	}
	return out, nil
}

// createTopic creates a topic from the form; errors re-show the form.
func (s *Server) createTopic(w http.ResponseWriter, r *http.Request, sess *session) {
	f := createForm{Name: strings.TrimSpace(r.PostFormValue("name")), Partitions: r.PostFormValue("partitions"),
		Replication: r.PostFormValue("replication"), Configs: r.PostFormValue("configs")}
	err := checkTopicName(f.Name)
	var parts, rf int64
	var configs map[string]*string
	if err == nil {
		parts, err = parseInt("partitions", f.Partitions, 1, partitionsMax)
	}
	if err == nil {
		rf, err = parseInt("replication factor", f.Replication, 1, 32)
	}
	if err == nil {
		configs, err = parseConfigs(f.Configs)
	}
	if err == nil {
		err = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
			res, err := adm.CreateTopic(ctx, int32(parts), int16(rf), configs, f.Name)
			if err != nil {
				return err
			}
			return res.Err
		})
	}
	if err != nil {
		status, msg := classify(err)
		s.renderTopics(w, r, sess, status, "creating topic "+f.Name+": "+msg, "", f)
		return
	}
	http.Redirect(w, r, "/topics/"+url.PathEscape(f.Name)+"?created=1", http.StatusSeeOther)
}

type partitionRow struct {
	Partition      int32
	Leader         int32
	Replicas, ISR  []int32
	Start, End     int64
	Messages       int64
	Size           string // the leader replica's log bytes, "" unknown
	UnderReplicate bool
	Err            string
}

type configRow struct {
	Key, Value, Source string
	Sensitive          bool
}

type topicData struct {
	Name       string
	Internal   bool
	Partitions []partitionRow
	Configs    []configRow
	ConfigErr  string
	SizesErr   string // why sizes are not shown (DescribeLogDirs failed)
}

// topic shows one topic: partitions with leader, replicas, ISR and
// offsets; its configs with a form to change them; delete.
func (s *Server) topic(w http.ResponseWriter, r *http.Request, sess *session) {
	notice := ""
	switch {
	case r.URL.Query().Get("created") == "1":
		notice = "Topic created."
	case r.URL.Query().Get("configured") == "1":
		notice = "Config changed."
	case r.URL.Query().Get("partitioned") == "1":
		notice = "Partitions added."
	}
	s.renderTopic(w, r, sess, http.StatusOK, "", notice)
}

func (s *Server) renderTopic(w http.ResponseWriter, r *http.Request, sess *session, status int, errMsg, notice string) {
	name := r.PathValue("topic")
	if err := checkTopicName(name); err != nil {
		s.failErr(w, r, sess, "topic", err)
		return
	}
	d := topicData{Name: name}
	err := s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
		td, err := adm.ListTopicsWithInternal(ctx, name)
		if err != nil {
			return err
		}
		t, ok := td[name]
		if !ok {
			return badf("no topic %s in the metadata", name)
		}
		if t.Err != nil {
			return t.Err
		}
		d.Internal = t.IsInternal
		starts, err := adm.ListStartOffsets(ctx, name)
		if err != nil {
			return err
		}
		ends, err := adm.ListEndOffsets(ctx, name)
		if err != nil {
			return err
		}
		for _, p := range t.Partitions.Sorted() {
			row := partitionRow{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR,
				UnderReplicate: len(p.ISR) < len(p.Replicas), Start: -1, End: -1}
			if so, ok := starts.Lookup(name, p.Partition); ok && so.Err == nil {
				row.Start = so.Offset
			} else if ok {
				row.Err = so.Err.Error()
			}
			if eo, ok := ends.Lookup(name, p.Partition); ok && eo.Err == nil {
				row.End = eo.Offset
			} else if ok {
				row.Err = eo.Err.Error()
			}
			if row.Start >= 0 && row.End >= row.Start {
				row.Messages = row.End - row.Start
			}
			d.Partitions = append(d.Partitions, row)
		}
		d.SizesErr = addSizes(ctx, adm, name, d.Partitions)
		rcs, err := adm.DescribeTopicConfigs(ctx, name)
		if err == nil {
			var rc kadm.ResourceConfig
			rc, err = rcs.On(name, nil)
			if err == nil && rc.Err != nil {
				err = rc.Err
			}
			for _, c := range rc.Configs {
				row := configRow{Key: c.Key, Source: c.Source.String(), Sensitive: c.Sensitive}
				if c.Value != nil && !c.Sensitive {
					row.Value = *c.Value
				}
				d.Configs = append(d.Configs, row)
			}
		}
		if err != nil {
			// Configs need DESCRIBE_CONFIGS: show the partitions anyway.
			_, d.ConfigErr = classify(err)
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, sess, "topic "+name, err)
		return
	}
	p := s.pageFor(sess, "topics", "Topic "+name)
	p.Data, p.Error, p.Notice = d, errMsg, notice
	s.render(w, status, "topic", p)
}

// deleteTopic deletes a topic once its name is typed again.
func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("topic")
	if err := checkTopicName(name); err != nil {
		s.failErr(w, r, sess, "topic", err)
		return
	}
	if r.PostFormValue("confirm") != name {
		s.renderTopic(w, r, sess, http.StatusBadRequest, "to delete, type the topic's name ("+name+") in the confirmation box", "")
		return
	}
	err := s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
		res, err := adm.DeleteTopic(ctx, name)
		if err != nil {
			return err
		}
		return res.Err
	})
	if err != nil {
		status, msg := classify(err)
		if status == http.StatusNotFound {
			s.fail(w, r, sess, status, "deleting topic "+name+": "+msg)
			return
		}
		s.renderTopic(w, r, sess, status, "deleting topic "+name+": "+msg, "")
		return
	}
	s.renderTopics(w, r, sess, http.StatusOK, "", "Topic "+name+" deleted.", createForm{Partitions: "1", Replication: "1"})
}

// alterTopicConfig sets or deletes one config (IncrementalAlterConfigs).
func (s *Server) alterTopicConfig(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("topic")
	if err := checkTopicName(name); err != nil {
		s.failErr(w, r, sess, "topic", err)
		return
	}
	key, value, op := strings.TrimSpace(r.PostFormValue("key")), r.PostFormValue("value"), r.PostFormValue("op")
	var err error
	var alter kadm.AlterConfig
	switch {
	case key == "" || len(key) > 255 || strings.ContainsAny(key, " \t\r\n="):
		err = badf("config key %q: want a config name such as retention.ms", key)
	case op == "set":
		alter = kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &value}
	case op == "delete":
		alter = kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}
	default:
		err = badf("operation %q: want set or delete", op)
	}
	if err == nil {
		err = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
			res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{alter}, name)
			if err != nil {
				return err
			}
			for _, rr := range res {
				if err := withMessage(rr.Err, rr.ErrMessage); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		status, msg := classify(err)
		s.renderTopic(w, r, sess, status, "changing "+key+": "+msg, "")
		return
	}
	http.Redirect(w, r, "/topics/"+url.PathEscape(name)+"?configured=1", http.StatusSeeOther)
}

// addSizes fills each partition's size from DescribeLogDirs (the leader's
// replica), or says why it cannot: the API needs DESCRIBE on the cluster
// and a broker that serves it.
func addSizes(ctx context.Context, adm *kadm.Client, topic string, rows []partitionRow) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if vs, err := adm.ApiVersions(ctx); err == nil {
		for _, v := range vs {
			if _, ok := v.KeyMaxVersion(kmsg.DescribeLogDirs.Int16()); v.Err == nil && !ok {
				return fmt.Sprintf("broker %d does not serve DescribeLogDirs", v.NodeID)
			}
		}
	}
	set := kadm.TopicsSet{}
	for _, r := range rows {
		set.Add(topic, r.Partition)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		_, msg := classify(err)
		return msg
	}
	for i, r := range rows {
		if bd, ok := dirs[r.Leader]; ok {
			if p, ok := bd.LookupPartition(topic, r.Partition); ok {
				rows[i].Size = humanBytes(p.Size)
			}
		}
	}
	return ""
}

// humanBytes formats a byte count with binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// addPartitions raises a topic's partition count (CreatePartitions, which
// needs ALTER on the topic) to the total the form gives; the broker places
// the new partitions. A count not above the current one is refused.
func (s *Server) addPartitions(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("topic")
	if err := checkTopicName(name); err != nil {
		s.failErr(w, r, sess, "topic", err)
		return
	}
	total, err := parseInt("new partition count", r.PostFormValue("count"), 1, partitionsMax)
	if err == nil {
		err = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
			td, err := adm.ListTopicsWithInternal(ctx, name)
			if err != nil {
				return err
			}
			t, ok := td[name]
			if !ok {
				return kerr.UnknownTopicOrPartition
			}
			if t.Err != nil {
				return t.Err
			}
			if cur := int64(len(t.Partitions)); total <= cur {
				return badf("new partition count: %s has %d partitions; give a larger total (partitions cannot be removed)", name, cur)
			}
			res, err := adm.UpdatePartitions(ctx, int(total), name)
			if err != nil {
				return err
			}
			for _, rr := range res {
				if err := withMessage(rr.Err, rr.ErrMessage); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		status, msg := classify(err)
		if status == http.StatusNotFound {
			s.fail(w, r, sess, status, "adding partitions to "+name+": "+msg)
			return
		}
		s.renderTopic(w, r, sess, status, "adding partitions to "+name+": "+msg, "")
		return
	}
	http.Redirect(w, r, "/topics/"+url.PathEscape(name)+"?partitioned=1", http.StatusSeeOther)
}

// partitionsMax bounds a partition count the forms take.
const partitionsMax = 100000

// withMessage is err with the broker's message for it, when it sent one.
func withMessage(err error, msg string) error {
	if err != nil && msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}
