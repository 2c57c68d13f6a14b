package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Audit actions (DESIGN §4; sharing adds share and unshare).
const (
	AuditAttach     = "attach"
	AuditDetach     = "detach"
	AuditRegister   = "register"
	AuditUnregister = "unregister"
	AuditShare      = "share"
	AuditUnshare    = "unshare"
)

// AuditEntry is one audit line.
type AuditEntry struct {
	TS     int64  `json:"ts_ms"`
	Action string `json:"action"`
	// Space is the computer's name.
	Space  string `json:"space"`
	Detail string `json:"detail,omitempty"`
}

// Audit appends an entry (TS defaults to now). The stream is JetStream's,
// so every node of a cluster writes to the same one.
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	if e.TS == 0 {
		e.TS = s.now().UnixMilli()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return storeErr("encode an audit line", err)
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	if _, err := s.js.Publish(ctx, auditSubject, b); err != nil {
		return storeErr("write the audit", err)
	}
	return nil
}

// AuditEntries answers the last n entries (oldest first).
func (s *Store) AuditEntries(ctx context.Context, n int) ([]AuditEntry, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	info, err := s.audit.Info(ctx)
	if err != nil {
		return nil, storeErr("read the audit", err)
	}
	first := info.State.FirstSeq
	if last := info.State.LastSeq; last >= uint64(n) && last-uint64(n)+1 > first {
		first = last - uint64(n) + 1
	}
	var out []AuditEntry
	for seq := first; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.audit.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return out, storeErr("read the audit", err)
		}
		var e AuditEntry
		if json.Unmarshal(m.Data, &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}
