package faultproxy_test

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/internal/faultproxy"
)

func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn) error {
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

// CutAll ends the open connections (a read on one sees the end), Refuse
// closes the new ones, and after Refuse(false) connections work again.
func TestCutAllAndRefuse(t *testing.T) {
	p, err := faultproxy.Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.CutAll()
	if err := roundTrip(c); err == nil {
		t.Fatal("a connection open at CutAll still carried a round trip")
	}
	p.Refuse(true)
	c2, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2); err == nil {
		t.Fatal("a connection made while refusing carried a round trip")
	}
	p.Refuse(false)
	c3, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	p.Delay(50 * time.Millisecond)
	start := time.Now()
	if err := roundTrip(c3); err != nil {
		t.Fatalf("after Refuse(false): %v", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("a round trip with 50 ms each way took %v", d)
	}
}
