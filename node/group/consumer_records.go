package group

// The durable image of a KIP-848 consumer group in __consumer_offsets.
//
// Kafka splits it over several record kinds (ConsumerGroupMetadata,
// member metadata, target assignment, current assignment: key versions
// 3-8). Floe writes one record per group, under its own key version
// ConsumerKeyVersion (outside Kafka's range, like the share-state keys),
// holding the whole state: the group epoch, the assignment epoch, the
// subscribed topics' partition counts and every member with its epochs,
// reconciliation state, subscription, target and owned partitions. Each
// heartbeat that changes the group writes it whole; compaction keeps the
// last. It is JSON with a format version, so a newer layout can be told
// apart. Session deadlines are not stored: after a failover every member's
// session starts again (Start), as for classic members.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// ConsumerKeyVersion leads every consumer-group record key.
const ConsumerKeyVersion int16 = 0x7f10

const consumerFormat = 1

func consumerKey(group string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(ConsumerKeyVersion)), group...)
}

type consumerImage struct {
	Format int `json:"format"`
	*consumerGroup
}

func encodeConsumerGroup(cg *consumerGroup) []byte {
	b, _ := json.Marshal(consumerImage{Format: consumerFormat, consumerGroup: cg}) // plain data: cannot fail
	return b
}

func decodeConsumerGroup(b []byte) (*consumerGroup, error) {
	img := consumerImage{consumerGroup: newConsumerGroup()}
	if err := json.Unmarshal(b, &img); err != nil {
		return nil, fmt.Errorf("group: consumer group value: %w", err)
	}
	if img.Format != consumerFormat {
		return nil, fmt.Errorf("group: consumer group value format %d", img.Format)
	}
	cg := img.consumerGroup
	if cg.Members == nil {
		cg.Members = map[string]*cmember{}
	}
	for id, m := range cg.Members { //floe:unordered validates each
		if m == nil || m.ID != id {
			return nil, fmt.Errorf("group: consumer group member %q malformed", id)
		}
		if m.Assigned == nil {
			m.Assigned = assignment{}
		}
	}
	return cg, nil
}

// replayConsumer applies a consumer-group record: the image replaces the
// group's state (a classic membership goes), a tombstone removes it.
func (c *Coordinator) replayConsumer(key, value []byte) error {
	name := string(key[2:])
	if value == nil {
		if g := c.groups[name]; g != nil && g.cons != nil {
			g.cons, g.protocolType = nil, ""
			c.forgetIfEmpty(g)
		}
		return nil
	}
	cg, err := c.env.Images.decode(value)
	if err != nil {
		return err
	}
	cg.committed = bytes.Clone(value) // value is the log reader's buffer: do not pin it
	g := c.loadedGroup(name)
	resetMembership(g)
	g.persisted = false
	g.cons, g.protocolType = cg, "consumer"
	return nil
}

// startConsumers starts every loaded consumer member's session now.
func (c *Coordinator) startConsumers(now time.Duration) {
	for _, name := range c.groupNames() {
		g := c.groups[name]
		if g.cons == nil {
			continue
		}
		for _, id := range g.cons.memberIDs() {
			m := g.cons.Members[id]
			if m.State == memberUnrevoked {
				m.revokeDeadline = now + millis(m.RebalanceMillis)
			}
			c.touchConsumer(g, m, now)
		}
	}
}

// downgradeConsumer turns an empty consumer group back into a classic one
// (a classic member joins it, as Kafka allows for an empty group): its
// record is tombstoned; offsets stay.
func (c *Coordinator) downgradeConsumer(g *group) {
	g.cons, g.protocolType = nil, ""
	c.env.Log.Write([]Record{{Key: consumerKey(g.name)}}, func(time.Duration, error) {})
}
