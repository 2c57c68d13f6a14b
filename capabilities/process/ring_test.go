package process_test

import (
	"bytes"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/process"
)

func TestRingOffsetsAndGaps(t *testing.T) {
	t.Parallel()
	r := process.NewRing(8)
	_, _ = r.Write([]byte("abcde"))
	buf := make([]byte, 16)
	c := r.ReadAt(buf, 0)
	if c.From != 0 || string(buf[:c.N]) != "abcde" {
		t.Fatalf("read 0: from %d %q", c.From, buf[:c.N])
	}
	_, _ = r.Write([]byte("fghijk")) // 11 bytes total, ring holds the last 8
	c = r.ReadAt(buf, 0)
	if c.From != 3 || string(buf[:c.N]) != "defghijk" {
		t.Fatalf("read after wrap: from %d %q", c.From, buf[:c.N])
	}
	c = r.ReadAt(buf, 9)
	if c.From != 9 || string(buf[:c.N]) != "jk" {
		t.Fatalf("read 9: from %d %q", c.From, buf[:c.N])
	}
	c = r.ReadAt(buf, 11)
	if c.N != 0 || c.EOF {
		t.Fatalf("read at end: %+v", c)
	}
	r.Close()
	if c = r.ReadAt(buf, 11); !c.EOF {
		t.Fatalf("closed ring at end must report EOF: %+v", c)
	}
	if r.End() != 11 {
		t.Fatalf("end %d", r.End())
	}
}

func TestRingGrowsKeepingOffsets(t *testing.T) {
	t.Parallel()
	const limit = 1 << 16
	r := process.NewRing(limit)
	var all []byte
	for i := range 5000 {
		chunk := bytes.Repeat([]byte{byte(i)}, i%97+1)
		all = append(all, chunk...)
		_, _ = r.Write(chunk)
	}
	buf := make([]byte, limit)
	want := all[len(all)-limit:]
	c := r.ReadAt(buf, 0)
	if c.From != int64(len(all)-limit) || !bytes.Equal(buf[:c.N], want) {
		t.Fatalf("from %d n %d: ring content differs from the stream tail", c.From, c.N)
	}
}

func FuzzRing(f *testing.F) {
	f.Add(uint16(7), []byte("hello world, a longer line"), uint8(3))
	f.Add(uint16(1), []byte("x"), uint8(1))
	f.Add(uint16(4096), bytes.Repeat([]byte("ab"), 5000), uint8(200))
	f.Fuzz(func(t *testing.T, limit uint16, data []byte, step uint8) {
		if limit == 0 || step == 0 {
			return
		}
		r := process.NewRing(int(limit))
		for i := 0; i < len(data); i += int(step) {
			_, _ = r.Write(data[i:min(i+int(step), len(data))])
		}
		buf := make([]byte, len(data)+1)
		c := r.ReadAt(buf, 0)
		held := min(len(data), int(limit))
		if c.From != int64(len(data)-held) || !bytes.Equal(buf[:c.N], data[len(data)-held:]) {
			t.Fatalf("limit %d step %d: from %d n %d", limit, step, c.From, c.N)
		}
	})
}
