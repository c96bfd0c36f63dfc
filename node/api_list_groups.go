package node

// ListGroups (key 16), versions 0-4: the groups this broker coordinates
// (admin clients ask every broker and merge), sorted by offsets partition
// and name. v4 filters by state (case-insensitive); v5's type filter is not
// advertised (every group is "classic").

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(16, 0, 4, serveListGroups) }

func serveListGroups(r *Reactor, _ Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	r.syncCoordinators()
	var states []string
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	for _, co := range r.localCoordinators() {
		resp.Groups = append(resp.Groups, co.ListGroups(states)...)
	}
	respond(resp)
}
