package mesh

import (
	"bytes"
	"testing"
)

// A trunk message of arbitrary bytes: parseMsg takes only a known type
// with a whole header, and what it parsed writes back to the same bytes.
func FuzzParseMsg(f *testing.F) {
	f.Add(appendMsg(nil, msgData, 7, 1, []byte("yamux bytes")))
	f.Add(appendMsg(nil, msgReset|fromAcceptor, 7, 0, nil))
	f.Add(appendMsg(nil, msgHello, 1<<63, 0, nil))
	f.Add([]byte{msgData, 0, 0})
	f.Add([]byte{9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, acceptor, id, seq, payload, ok := parseMsg(b)
		if !ok {
			return
		}
		flag := byte(0)
		if acceptor {
			flag = fromAcceptor
		}
		if got := appendMsg(nil, typ|flag, id, seq, payload); !bytes.Equal(got, b) {
			t.Fatalf("parsed %q, which writes %q", b, got)
		}
	})
}
