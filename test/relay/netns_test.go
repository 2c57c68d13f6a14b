package relay_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"
	"golang.org/x/sys/unix"
)

// A netns is a named network namespace the test made (ip netns add),
// inside the package's own (nstest): a network of its own that reaches
// only what the test links it to with veth pairs, and sends no packet off
// the machine.
type netns struct{ name string }

var netnsSeq atomic.Int64

// newNetns makes a namespace with lo up; the test's end deletes it.
func newNetns(t testing.TB, role string) *netns {
	t.Helper()
	n := &netns{name: fmt.Sprintf("cua-%s-%d-%d", role, os.Getpid(), netnsSeq.Add(1))}
	ipCmd(t, "netns", "add", n.name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.name).Run() })
	ipCmd(t, "-n", n.name, "link", "set", "lo", "up")
	return n
}

// ipCmd runs ip(8) and fails the test with its output when it fails.
func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// vethEnd is one end of a veth link: in ns (nil: the test's own), named
// dev, with the address cidr.
type vethEnd struct {
	ns   *netns
	dev  string
	cidr string
}

// link joins two namespaces with a veth pair and brings both ends up.
// Nothing is forwarded between links: a namespace reaches only its peers.
func link(t testing.TB, a, b vethEnd) {
	t.Helper()
	ipCmd(t, "link", "add", a.dev, "type", "veth", "peer", "name", b.dev)
	for _, e := range []vethEnd{a, b} {
		var pre []string
		if e.ns != nil {
			ipCmd(t, "link", "set", e.dev, "netns", e.ns.name)
			pre = []string{"-n", e.ns.name}
		}
		ipCmd(t, append(pre, "addr", "add", e.cidr, "dev", e.dev)...)
		ipCmd(t, append(pre, "link", "set", e.dev, "up")...)
	}
	if a.ns == nil {
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", a.dev).Run() })
	}
}

// command is ip netns exec: a process born in n.
func (n *netns) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.name, name}, args...)...)
}

// do runs f on an OS thread that entered n: a socket made there stays in
// n wherever it is used from. The thread then goes back to the test's own
// namespace before it is handed back to other goroutines. It must not die
// instead: a child process started from it earlier (Xvfb, with the
// parent-death signal, which Linux ties to the thread) would be killed
// with it, which made this package's X server vanish under its tests.
func (n *netns) do(f func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open this thread's netns: %w", err)
			return
		}
		defer unix.Close(own)
		fd, err := unix.Open("/run/netns/"+n.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open netns %s: %w", n.name, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns %s: %w", n.name, err)
			return
		}
		f()
		if unix.Setns(own, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread() // back home: the thread may serve others
		} // else it stays locked, and dies with this goroutine in n
		errc <- nil
	}()
	return <-errc
}

// dialContext dials from n (for an http.Transport of a client in n).
func (n *netns) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	var err error
	if nsErr := n.do(func() { c, err = (&net.Dialer{}).DialContext(ctx, network, addr) }); nsErr != nil {
		return nil, nsErr
	}
	return c, err
}

// pionNet is pion's network (transport.Net) inside n: every socket a
// peer connection makes (host candidates, TURN allocations) is made in n,
// and the interfaces it finds are n's. Give it with SettingEngine.SetNet.
func (n *netns) pionNet(t testing.TB) transport.Net {
	t.Helper()
	var inner *stdnet.Net
	var err error
	if nsErr := n.do(func() { inner, err = stdnet.NewNet() }); nsErr != nil || err != nil {
		t.Fatalf("pion net in %s: %v %v", n.name, nsErr, err)
	}
	return &nsNet{ns: n, inner: inner}
}

type nsNet struct {
	ns    *netns
	inner *stdnet.Net
}

// in runs f in the namespace; a namespace that cannot be entered fails
// the call (never silently the test's own network).
func in[T any](n *nsNet, f func() (T, error)) (T, error) {
	var v T
	var err error
	if nsErr := n.ns.do(func() { v, err = f() }); nsErr != nil {
		var zero T
		return zero, nsErr
	}
	return v, err
}

func (n *nsNet) ListenPacket(network, address string) (net.PacketConn, error) {
	return in(n, func() (net.PacketConn, error) { return n.inner.ListenPacket(network, address) })
}

func (n *nsNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	return in(n, func() (transport.UDPConn, error) { return n.inner.ListenUDP(network, laddr) })
}

func (n *nsNet) ListenTCP(network string, laddr *net.TCPAddr) (transport.TCPListener, error) {
	return in(n, func() (transport.TCPListener, error) { return n.inner.ListenTCP(network, laddr) })
}

func (n *nsNet) Dial(network, address string) (net.Conn, error) {
	return in(n, func() (net.Conn, error) { return n.inner.Dial(network, address) })
}

func (n *nsNet) DialUDP(network string, laddr, raddr *net.UDPAddr) (transport.UDPConn, error) {
	return in(n, func() (transport.UDPConn, error) { return n.inner.DialUDP(network, laddr, raddr) })
}

func (n *nsNet) DialTCP(network string, laddr, raddr *net.TCPAddr) (transport.TCPConn, error) {
	return in(n, func() (transport.TCPConn, error) { return n.inner.DialTCP(network, laddr, raddr) })
}

func (n *nsNet) ResolveIPAddr(network, address string) (*net.IPAddr, error) {
	return n.inner.ResolveIPAddr(network, address)
}

func (n *nsNet) ResolveUDPAddr(network, address string) (*net.UDPAddr, error) {
	return n.inner.ResolveUDPAddr(network, address)
}

func (n *nsNet) ResolveTCPAddr(network, address string) (*net.TCPAddr, error) {
	return n.inner.ResolveTCPAddr(network, address)
}

func (n *nsNet) Interfaces() ([]*transport.Interface, error) { return n.inner.Interfaces() }

func (n *nsNet) InterfaceByIndex(index int) (*transport.Interface, error) {
	return n.inner.InterfaceByIndex(index)
}

func (n *nsNet) InterfaceByName(name string) (*transport.Interface, error) {
	return n.inner.InterfaceByName(name)
}

func (n *nsNet) CreateDialer(d *net.Dialer) transport.Dialer { return nsDialer{n: n, d: d} }

func (n *nsNet) CreateListenConfig(lc *net.ListenConfig) transport.ListenConfig {
	return nsListenConfig{n: n, lc: lc}
}

type nsDialer struct {
	n *nsNet
	d *net.Dialer
}

func (d nsDialer) Dial(network, address string) (net.Conn, error) {
	return in(d.n, func() (net.Conn, error) { return d.d.Dial(network, address) })
}

type nsListenConfig struct {
	n  *nsNet
	lc *net.ListenConfig
}

func (l nsListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	return in(l.n, func() (net.Listener, error) { return l.lc.Listen(ctx, network, address) })
}

func (l nsListenConfig) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	return in(l.n, func() (net.PacketConn, error) { return l.lc.ListenPacket(ctx, network, address) })
}
