package mesh_test

import (
	"bytes"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/mesh"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// An open request of arbitrary bytes: ReadOpen answers a request that
// writes back to the bytes it read, or an invalid_argument; it reads no
// byte past the request.
func FuzzReadOpen(f *testing.F) {
	for _, o := range []mesh.OpenRequest{
		{Kind: mesh.KindHTTP, Computer: "box", Person: "u1", PersonName: "alice", Role: protocol.RoleOwner},
		{Kind: mesh.KindOffer, Computer: "box", Person: protocol.LinkPerson, PersonName: protocol.LinkPerson, Role: protocol.RoleLink},
		{Kind: mesh.KindData, Computer: "b-2", Person: "u2", Role: protocol.RoleViewer},
	} {
		var buf bytes.Buffer
		_ = mesh.WriteOpen(&buf, o)
		f.Add(buf.Bytes())
		f.Add(append(buf.Bytes(), "GET / HTTP/1.1\r\n"...))
	}
	f.Add([]byte("CUAM\x01\x09\x00"))
	f.Add([]byte("CUAM\x01\x01\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		o, err := mesh.ReadOpen(r)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("kind %s: %v", api.KindOf(err), err)
			}
			return
		}
		var buf bytes.Buffer
		if err := mesh.WriteOpen(&buf, o); err != nil {
			t.Fatalf("read %+v, which does not write: %v", o, err)
		}
		if read := len(b) - r.Len(); !bytes.Equal(buf.Bytes(), b[:read]) {
			t.Fatalf("read %q as %+v, which writes %q", b[:read], o, buf.Bytes())
		}
	})
}

// The home node's answer of arbitrary bytes: nil only for the ok answer,
// otherwise an error with a kind.
func FuzzReadAnswer(f *testing.F) {
	for _, e := range []error{nil, api.Errorf(api.KindLimitExceeded, "too many").WithReason("too_many_streams")} {
		var buf bytes.Buffer
		_ = mesh.WriteAnswer(&buf, e)
		f.Add(buf.Bytes())
	}
	f.Add([]byte("CUAM\x01\x00\x02{}"))
	f.Add([]byte("CUAM\x01\xff\xff"))
	f.Add([]byte("CUAM\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := mesh.ReadAnswer(bytes.NewReader(b))
		if err == nil {
			if !bytes.HasPrefix(b, []byte("CUAM\x00")) {
				t.Fatalf("ok from %q", b)
			}
			return
		}
		if e := api.AsError(err); e.Kind == "" {
			t.Fatalf("an error without a kind: %#v", err)
		}
	})
}

// A notice of arbitrary bytes: parsed only with a known op, a node, and
// the fields its op needs.
func FuzzParseNotice(f *testing.F) {
	f.Add([]byte(`{"op":"kick","computer":"box","person":"u1","why":"the share ended","from":"a"}`))
	f.Add([]byte(`{"op":"end","computer":"box","code":4009,"from":"a"}`))
	f.Add([]byte(`{"op":"recheck_person","person":"u1","from":"n-1"}`))
	f.Add([]byte(`{"op":"attached","computer":"box","since_ms":1,"from":"b"}`))
	f.Add([]byte(`{"op":"kick","from":"a.b"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := mesh.ParseNotice(b)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("kind %s: %v", api.KindOf(err), err)
			}
			return
		}
		if mesh.CheckNode(n.From) != nil || n.Op == "" {
			t.Fatalf("parsed %+v", n)
		}
	})
}

// A directory answer of arbitrary bytes: parsed only with a node's name.
func FuzzParsePresence(f *testing.F) {
	f.Add([]byte(`{"node":"b","since_ms":1,"daemon":"1.0","connected":["u1"]}`))
	f.Add([]byte(`{"node":"a.b"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := mesh.ParsePresence(b)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("kind %s: %v", api.KindOf(err), err)
			}
			return
		}
		if mesh.CheckNode(p.Node) != nil {
			t.Fatalf("parsed %+v", p)
		}
	})
}
