package node

// How ListGroups and DescribeGroups see share groups (shares.go): a share
// group is listed with protocol type "share" and group type "share"
// (classic groups get "classic"), in state "Stable" with members or
// "Empty"; DescribeGroups of a share group name answers its members'
// ids, client ids and hosts with protocol type "share".

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/share"
)

func shareGroupState(g *share.Group) string {
	if len(g.Members()) > 0 {
		return "Stable"
	}
	return "Empty"
}

// listShareGroups returns the local share groups as ListGroups entries,
// filtered by states (case-insensitive; empty: all).
func (r *Reactor) listShareGroups(states []string) []kmsg.ListGroupsResponseGroup {
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range r.localShareGroups() {
		st := shareGroupState(g)
		if !matchesFilter(states, st) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.Name, "share", st, "share"
		out = append(out, lg)
	}
	return out
}

// matchesFilter reports whether v is in filter, ignoring case (an empty
// filter matches everything).
func matchesFilter(filter []string, v string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, v) {
			return true
		}
	}
	return false
}

// describeShareGroup fills d (a DescribeGroups answer that found no
// classic group) from the local share group of that name, if any.
func (r *Reactor) describeShareGroup(d *kmsg.DescribeGroupsResponseGroup) {
	for _, g := range r.localShareGroups() {
		if g.Name != d.Group {
			continue
		}
		d.ErrorCode, d.ProtocolType, d.State, d.Protocol = 0, "share", shareGroupState(g), ""
		d.Members = nil
		for _, m := range g.Members() {
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID, dm.ClientID, dm.ClientHost = m.ID, m.ClientID, m.ClientHost
			d.Members = append(d.Members, dm)
		}
		return
	}
}
