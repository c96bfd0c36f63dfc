package node

// ListGroups (key 16), versions 0-5: the groups this broker coordinates
// (admin clients ask every broker and merge), sorted by offsets partition
// and name, then the share groups (share_list.go). v4 filters by state and
// v5 by type ("classic", "consumer" or "share"), both case-insensitive.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
)

// Authorization: DESCRIBE on the cluster lists every group; without it,
// only the groups the client may DESCRIBE are listed (no error, as Kafka).
func serveListGroups(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	az := r.authorize(c, req)
	all := az.sees(kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLOperationDescribe)
	r.syncCoordinators()
	var states []string
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	var types []string
	if req.Version >= 5 {
		types = req.TypesFilter
	}
	var groups []kmsg.ListGroupsResponseGroup
	for _, co := range r.localCoordinators() {
		for _, g := range co.ListGroups(states) {
			if matchesFilter(types, g.GroupType) { // "classic" or "consumer" (KIP-848)
				groups = append(groups, g)
			}
		}
	}
	if matchesFilter(types, "share") {
		groups = append(groups, r.listShareGroups(states)...)
	}
	for _, g := range groups {
		if all || az.sees(kmsg.ACLResourceTypeGroup, g.Group, kmsg.ACLOperationDescribe) {
			resp.Groups = append(resp.Groups, g)
		}
	}
	respond(resp)
}
