package mesh

import (
	"encoding/json"

	"github.com/nats-io/nats.go"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// maxNoticeSize bounds a notice on the wire.
const maxNoticeSize = 4 << 10

// NoticeOp is what a notice asks the node holding its computer to do.
type NoticeOp string

// The ops.
const (
	// OpKick: Kick Person (protocol.KickAll: every shared person) and cut
	// their streams (a share ended, or an editor became a viewer).
	OpKick NoticeOp = "kick"
	// OpCut: cut Person's streams only (their role changed otherwise).
	OpCut NoticeOp = "cut"
	// OpEnd: end the computer's session with Code (removed, rotated).
	OpEnd NoticeOp = "end"
	// OpRecheckPerson: Person left a team; on every computer they reach
	// no more, kick them. Computer is empty.
	OpRecheckPerson NoticeOp = "recheck_person"
	// OpAttached: the computer attached to From at SinceMS; a node holding
	// an older session of it ends that one (replaced).
	OpAttached NoticeOp = "attached"
)

// Notice is a change made on one node that the node holding a computer's
// session acts on.
type Notice struct {
	Op       NoticeOp           `json:"op"`
	Computer string             `json:"computer,omitempty"`
	Person   string             `json:"person,omitempty"`
	Why      string             `json:"why,omitempty"`
	Code     protocol.CloseCode `json:"code,omitempty"`
	SinceMS  int64              `json:"since_ms,omitempty"`
	// From is the node that published it (Publish sets it); a node skips
	// its own.
	From string `json:"from"`
}

// Publish sends n to every node (this one skips it: it acted already).
func (m *Mesh) Publish(n Notice) error {
	n.From = m.o.Node
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	if len(b) > maxNoticeSize {
		return api.Errorf(api.KindInvalidArgument, "mesh: a notice of %d bytes, over %d", len(b), maxNoticeSize)
	}
	if err := m.nc.Publish(subjNotice, b); err != nil {
		return api.Errorf(api.KindRelay, "mesh: publish a notice: %w", err)
	}
	return nil
}

func (m *Mesh) onNotice(msg *nats.Msg) {
	n, err := ParseNotice(msg.Data)
	if err != nil {
		m.log.Warn("a bad notice", "err", err)
		return
	}
	if n.From == m.o.Node {
		return
	}
	m.o.Notice(n)
}

// ParseNotice reads a notice: bounded, of a known op, with the fields its
// op needs.
func ParseNotice(b []byte) (Notice, error) {
	if len(b) > maxNoticeSize {
		return Notice{}, api.Errorf(api.KindInvalidArgument, "notice: %d bytes, over %d", len(b), maxNoticeSize)
	}
	var n Notice
	if err := json.Unmarshal(b, &n); err != nil {
		return Notice{}, api.Errorf(api.KindInvalidArgument, "notice: %v", err)
	}
	if CheckNode(n.From) != nil {
		return Notice{}, api.Errorf(api.KindInvalidArgument, "notice: no node")
	}
	switch n.Op {
	case OpKick, OpCut:
		if n.Computer == "" || n.Person == "" {
			return Notice{}, api.Errorf(api.KindInvalidArgument, "notice %s: no computer or person", n.Op)
		}
	case OpEnd, OpAttached:
		if n.Computer == "" {
			return Notice{}, api.Errorf(api.KindInvalidArgument, "notice %s: no computer", n.Op)
		}
	case OpRecheckPerson:
		if n.Person == "" {
			return Notice{}, api.Errorf(api.KindInvalidArgument, "notice %s: no person", n.Op)
		}
	default:
		return Notice{}, api.Errorf(api.KindInvalidArgument, "notice: unknown op %.40q", string(n.Op))
	}
	return n, nil
}
