package group

import (
	"bytes"
	"maps"
	"slices"
)

// Images memoizes the consumer-group images a coordinator's replay
// decodes. Every load of an offsets partition (each new leadership term)
// replays the whole partition, and JSON-decoding the same images again was
// most of a load's cost. The memo hands out deep copies of what
// decodeConsumerGroup returned for the same bytes, so a replay through it
// builds exactly the state a replay without it builds; only images that
// decode are kept (an error is decoded again each time, with its message).
//
// One Images may serve many coordinators (in the simulator every broker's
// of a run), all on one goroutine. A nil *Images decodes every time: a
// broker's choice (node.Env.GroupImages), since its loads are rare.
type Images struct {
	m     map[string]*consumerGroup
	bytes int
}

// imagesBytesMax bounds the memo's keys: past it the memo starts again
// empty (which copies are kept never changes what a replay builds).
const imagesBytesMax = 32 << 20

// decode is decodeConsumerGroup(b), from the memo when it holds b.
func (im *Images) decode(b []byte) (*consumerGroup, error) {
	if im == nil {
		return decodeConsumerGroup(b)
	}
	if cg, ok := im.m[string(b)]; ok {
		return cloneImage(cg), nil
	}
	cg, err := decodeConsumerGroup(b)
	if err != nil {
		return nil, err
	}
	if im.m == nil || im.bytes+len(b) > imagesBytesMax {
		im.m, im.bytes = map[string]*consumerGroup{}, 0
	}
	im.m[string(b)] = cloneImage(cg)
	im.bytes += len(b)
	return cg, nil
}

// cloneImage deep-copies a freshly decoded image: every map, slice and
// pointer of the copy is its own, and nil stays nil, empty stays empty (a
// decoded image's volatile fields are all zero).
func cloneImage(cg *consumerGroup) *consumerGroup {
	c := &consumerGroup{
		Epoch:           cg.Epoch,
		AssignmentEpoch: cg.AssignmentEpoch,
		Metadata:        maps.Clone(cg.Metadata),
	}
	if cg.Members != nil {
		c.Members = make(map[string]*cmember, len(cg.Members))
		//floe:unordered a copy of a map is the same whatever the order
		for id, m := range cg.Members {
			c.Members[id] = cloneImageMember(m)
		}
	}
	return c
}

func cloneImageMember(m *cmember) *cmember {
	if m == nil {
		return nil
	}
	c := &cmember{
		ID:              m.ID,
		InstanceID:      cloneStringPtr(m.InstanceID),
		Rack:            cloneStringPtr(m.Rack),
		ClientID:        m.ClientID,
		ClientHost:      m.ClientHost,
		Principal:       m.Principal,
		Epoch:           m.Epoch,
		PrevEpoch:       m.PrevEpoch,
		State:           m.State,
		Topics:          slices.Clone(m.Topics),
		Regex:           m.Regex,
		Assignor:        m.Assignor,
		RebalanceMillis: m.RebalanceMillis,
		Assigned:        cloneAssignment(m.Assigned),
		Revoking:        cloneAssignment(m.Revoking),
		Target:          cloneAssignment(m.Target),
	}
	if m.Classic != nil {
		c.Classic = &classicMember{SessionMillis: m.Classic.SessionMillis}
		if m.Classic.Protocols != nil {
			c.Classic.Protocols = make([]classicProtocol, len(m.Classic.Protocols))
			for i, p := range m.Classic.Protocols {
				c.Classic.Protocols[i] = classicProtocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)}
			}
		}
	}
	return c
}

func cloneStringPtr(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}

func cloneAssignment(a assignment) assignment {
	if a == nil {
		return nil
	}
	c := make(assignment, len(a))
	//floe:unordered a copy of a map is the same whatever the order
	for t, ps := range a {
		c[t] = slices.Clone(ps)
	}
	return c
}
