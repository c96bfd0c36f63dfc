package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode"

	"github.com/twmb/franz-go/pkg/kadm"
)

type groupRow struct {
	Name, State, ProtocolType, Type string
	Coordinator                     int32
}

// groups lists the consumer groups this session may describe.
func (s *Server) groups(w http.ResponseWriter, r *http.Request, sess *session) {
	var rows []groupRow
	err := s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
		lg, err := adm.ListGroups(ctx)
		if err != nil {
			return err
		}
		for _, g := range lg.Sorted() {
			rows = append(rows, groupRow{Name: g.Group, State: g.State, ProtocolType: g.ProtocolType, Type: g.GroupType, Coordinator: g.Coordinator})
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, sess, "listing groups", err)
		return
	}
	p := s.pageFor(sess, "groups", "Consumer groups")
	p.Data = rows
	s.render(w, http.StatusOK, "groups", p)
}

// checkGroupName refuses what no client could have named a group.
func checkGroupName(g string) error {
	if g == "" || len(g) > 255 || strings.IndexFunc(g, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return badf("group name %q: want 1 to 255 printable characters", g)
	}
	return nil
}

type memberRow struct {
	MemberID, InstanceID, ClientID, ClientHost string
	Assigned                                   []string // topic: partitions
}

type lagRow struct {
	Topic                string
	Partition            int32
	Member               string
	Commit, End, Lag     int64
	HasCommit            bool
	Err                  string
	LagPercentOfMaxWidth int // bar width for the table's inline bar, 0..100
}

type groupData struct {
	Name, State, ProtocolType, Protocol string
	Coordinator                         int32
	Members                             []memberRow
	Lag                                 []lagRow
	TotalLag                            int64
	Topics                              []string // topics with commits, for the reset form
	Chart                               chart
	Empty                               bool
	Reset                               resetForm
}

type resetForm struct {
	Topic, Partition, To, Offset string
}

// loadGroup describes a group and its lag, and records a lag sample.
func (s *Server) loadGroup(r *http.Request, sess *session, name string) (*groupData, error) {
	if err := checkGroupName(name); err != nil {
		return nil, err
	}
	d := &groupData{Name: name}
	err := s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
		lags, err := adm.Lag(ctx, name)
		if err != nil {
			return err
		}
		gl, ok := lags[name]
		if !ok {
			return fmt.Errorf("group %s: %w", name, errNoGroup)
		}
		if err := gl.Error(); err != nil {
			return err
		}
		if gl.State == "Dead" && len(gl.Members) == 0 && len(gl.Lag) == 0 {
			// DescribeGroups answers Dead, not an error, for a group
			// that never existed.
			return fmt.Errorf("group %s: %w", name, errNoGroup)
		}
		d.State, d.ProtocolType, d.Protocol, d.Coordinator = gl.State, gl.ProtocolType, gl.Protocol, gl.Coordinator.NodeID
		d.Empty = gl.State == "Empty" || gl.State == "Dead"
		for _, m := range gl.Members {
			row := memberRow{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost}
			if m.InstanceID != nil {
				row.InstanceID = *m.InstanceID
			}
			if ca, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range ca.Topics {
					ps := append([]int32(nil), t.Partitions...)
					sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
					row.Assigned = append(row.Assigned, fmt.Sprintf("%s: %v", t.Topic, ps))
				}
				sort.Strings(row.Assigned)
			}
			d.Members = append(d.Members, row)
		}
		seen := map[string]bool{}
		var maxLag int64
		for _, l := range gl.Lag.Sorted() {
			row := lagRow{Topic: l.Topic, Partition: l.Partition, Commit: l.Commit.At, End: l.End.Offset, Lag: l.Lag,
				HasCommit: l.Commit.At >= 0}
			if l.Member != nil {
				row.Member = l.Member.ClientID + " " + l.Member.ClientHost
			}
			if l.Err != nil {
				row.Err = l.Err.Error()
			}
			maxLag = max(maxLag, l.Lag)
			d.Lag = append(d.Lag, row)
			if !seen[l.Topic] {
				seen[l.Topic] = true
				d.Topics = append(d.Topics, l.Topic)
			}
		}
		for i := range d.Lag {
			if maxLag > 0 && d.Lag[i].Lag > 0 {
				d.Lag[i].LagPercentOfMaxWidth = int(d.Lag[i].Lag * 100 / maxLag)
			}
		}
		d.TotalLag = gl.Lag.Total()
		return nil
	})
	if err != nil {
		return nil, err
	}
	samples := s.lag.add(sess.user, name, s.cfg.Now(), d.TotalLag)
	d.Chart = lagChart(samples)
	return d, nil
}

var errNoGroup = errors.New("no such group")

func isNoGroup(err error) bool { return errors.Is(err, errNoGroup) }

// group shows a group's members, assignment, lag per partition and lag
// chart, and the offset reset form. ?partial=1 renders only the lag part
// (the page's script refreshes it).
func (s *Server) group(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("group")
	d, err := s.loadGroup(r, sess, name)
	if err != nil {
		if errors.Is(err, errNoGroup) {
			s.fail(w, r, sess, http.StatusNotFound, err.Error())
			return
		}
		s.failErr(w, r, sess, "group "+name, err)
		return
	}
	d.Reset = resetForm{To: "earliest"}
	if len(d.Topics) > 0 {
		d.Reset.Topic = d.Topics[0]
	}
	p := s.pageFor(sess, "groups", "Group "+name)
	if r.URL.Query().Get("reset") == "1" {
		p.Notice = "Offsets reset."
	}
	p.Data = d
	p.Partial = r.URL.Query().Get("partial") == "1"
	s.render(w, http.StatusOK, "group", p)
}

// groupLagJSON is the lag of a group as JSON, with the sample ring.
func (s *Server) groupLagJSON(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("group")
	d, err := s.loadGroup(r, sess, name)
	if err != nil {
		status, msg := classify(err)
		if errors.Is(err, errNoGroup) {
			status, msg = http.StatusNotFound, err.Error()
		}
		s.fail(w, r, sess, status, msg)
		return
	}
	type part struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Commit    int64  `json:"committed"`
		End       int64  `json:"end"`
		Lag       int64  `json:"lag"`
		Err       string `json:"error,omitempty"`
	}
	type sample struct {
		UnixMs int64 `json:"unix_ms"`
		Lag    int64 `json:"lag"`
	}
	out := struct {
		Group      string   `json:"group"`
		State      string   `json:"state"`
		Total      int64    `json:"total_lag"`
		Partitions []part   `json:"partitions"`
		Samples    []sample `json:"samples"`
	}{Group: d.Name, State: d.State, Total: d.TotalLag, Partitions: []part{}, Samples: []sample{}}
	for _, l := range d.Lag {
		out.Partitions = append(out.Partitions, part{l.Topic, l.Partition, l.Commit, l.End, l.Lag, l.Err})
	}
	for _, smp := range s.lag.get(sess.user, name) {
		out.Samples = append(out.Samples, sample{smp.at.UnixMilli(), smp.lag})
	}
	writeJSON(w, http.StatusOK, out)
}

// resetOffsets commits new offsets for an empty group: to the earliest or
// latest offset, or a given one, of one partition or all of a topic's.
func (s *Server) resetOffsets(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("group")
	f, part, offset, err := readResetForm(r, name)
	if err == nil {
		err = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
			return resetGroup(ctx, adm, name, f, part, offset)
		})
	}
	if err != nil {
		status, msg := classify(err)
		if errors.Is(err, errNotEmpty) {
			status = http.StatusConflict
		}
		d, lerr := s.loadGroup(r, sess, name)
		if lerr != nil {
			s.fail(w, r, sess, status, "resetting offsets of "+name+": "+msg)
			return
		}
		d.Reset = f
		p := s.pageFor(sess, "groups", "Group "+name)
		p.Data, p.Error = d, "resetting offsets: "+msg
		s.render(w, status, "group", p)
		return
	}
	http.Redirect(w, r, "/groups/"+url.PathEscape(name)+"?reset=1", http.StatusSeeOther)
}

// readResetForm reads and checks an offset reset form of group: the
// partition (-1: every partition of the topic) and offset it names.
func readResetForm(r *http.Request, group string) (f resetForm, part int32, offset int64, err error) {
	f = resetForm{Topic: strings.TrimSpace(r.PostFormValue("topic")), Partition: strings.TrimSpace(r.PostFormValue("partition")),
		To: r.PostFormValue("to"), Offset: strings.TrimSpace(r.PostFormValue("offset"))}
	if err = checkGroupName(group); err == nil {
		err = checkTopicName(f.Topic)
	}
	p := int64(-1)
	if err == nil && f.Partition != "" {
		p, err = parseInt("partition", f.Partition, 0, 1<<31-1)
	}
	if err == nil {
		switch f.To {
		case "earliest", "latest":
		case "offset":
			offset, err = parseInt("offset", f.Offset, 0, 1<<62)
		default:
			err = badf("reset to %q: want earliest, latest or offset", f.To)
		}
	}
	return f, int32(p), offset, err
}

var errNotEmpty = errors.New("the group has members: stop its consumers first (offsets of a live group are reset by its members' commits)")

func resetGroup(ctx context.Context, adm *kadm.Client, group string, f resetForm, part int32, offset int64) error {
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	if g, ok := dg[group]; ok {
		if g.Err != nil {
			return g.Err
		}
		if len(g.Members) > 0 || (g.State != "Empty" && g.State != "Dead") {
			return fmt.Errorf("group in state %s with %d members: %w", g.State, len(g.Members), errNotEmpty)
		}
	}
	os, err := resetTargets(ctx, adm, f, part, offset)
	if err != nil {
		return err
	}
	res, err := adm.CommitOffsets(ctx, group, os)
	if err != nil {
		return err
	}
	return res.Error()
}

// resetTargets computes the offsets a reset form asks for: the earliest
// or latest offset, or the given one (which must be within the
// partition's range), of partition part or, when part < 0, of every
// partition of f.Topic.
func resetTargets(ctx context.Context, adm *kadm.Client, f resetForm, part int32, offset int64) (kadm.Offsets, error) {
	starts, err := adm.ListStartOffsets(ctx, f.Topic)
	if err != nil {
		return nil, err
	}
	if err := starts.Error(); err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, f.Topic)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	var os kadm.Offsets
	for _, so := range sortedOffsets(starts) {
		if part >= 0 && so.Partition != part {
			continue
		}
		eo, _ := ends.Lookup(f.Topic, so.Partition)
		at := offset
		switch f.To {
		case "earliest":
			at = so.Offset
		case "latest":
			at = eo.Offset
		default:
			if at < so.Offset || at > eo.Offset {
				return nil, badf("offset %d is outside partition %d's range [%d, %d]", at, so.Partition, so.Offset, eo.Offset)
			}
		}
		os.AddOffset(f.Topic, so.Partition, at, -1)
	}
	if len(os) == 0 {
		return nil, badf("topic %s has no partition %d", f.Topic, part)
	}
	return os, nil
}
