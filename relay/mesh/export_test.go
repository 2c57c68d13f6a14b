package mesh

// DropNextMessage makes the next message of this node's trunk to peer
// go nowhere, as if NATS dropped it (a slow consumer): a fault the test
// cannot cause on purpose.
func (m *Mesh) DropNextMessage(peer string) bool {
	m.mu.Lock()
	t := m.trunks[token(peer)]
	m.mu.Unlock()
	if t == nil {
		return false
	}
	t.p.wmu.Lock()
	t.p.dropNext = true
	t.p.wmu.Unlock()
	return true
}
