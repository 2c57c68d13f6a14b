package desktop

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

// The daemon dials the X server's socket itself and hands it to xgb
// (NewConnNet), so that it owns the socket: it bounds the handshake with a
// deadline and closes the socket when the server stops answering, which
// ends every wait on it. xgb looks up credentials for an empty display
// name under NewConnNet, so the daemon looks them up itself and puts them
// into the setup request xgb writes (setupConn).

const (
	// x11TCPBase is the TCP port of display 0; display N listens on
	// x11TCPBase+N.
	x11TCPBase = 6000
	// maxDisplayNumber keeps x11TCPBase+N a TCP port.
	maxDisplayNumber = 65535 - x11TCPBase
	// maxScreenNumber bounds the screen of ":N.S"; servers have a handful.
	maxScreenNumber = 255
	// maxDisplayNameLen bounds a display name (a socket path included).
	maxDisplayNameLen = 4096
	// x11SocketDir holds the local servers' sockets, X0, X1, ...
	x11SocketDir = "/tmp/.X11-unix/X"
)

// displayName is a parsed X display name, in the forms xgb accepts:
// ":N", ":N.S", "unix:N", "host:N" (TCP port 6000+N), "proto/host:N"
// (proto tcp, inet, inet6 or unix) and "/path/to/socket:N" (the socket is
// the whole "/path/to/socket:N").
type displayName struct {
	network string // "unix", "tcp" or "tcp6"
	host    string // TCP host; "" for a socket
	socket  string // the socket path of "/path/to/socket:N"; "" otherwise
	number  int
	screen  int
}

// parseDisplay parses an X display name; its errors are invalid_argument.
func parseDisplay(s string) (displayName, error) {
	bad := func(why string) (displayName, error) {
		return displayName{}, api.Errorf(api.KindInvalidArgument, "X display name %q: %s (want :N, :N.S, host:N, unix:N, tcp/host:N or /path/to/socket:N)", s, why)
	}
	if s == "" {
		return bad("empty")
	}
	if len(s) > maxDisplayNameLen {
		return displayName{}, api.Errorf(api.KindInvalidArgument, "X display name of %d bytes is over the %d-byte limit", len(s), maxDisplayNameLen)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return bad("it holds a control character")
		}
	}
	colon := strings.LastIndexByte(s, ':')
	if colon < 0 {
		return bad("no ':' before the display number")
	}
	d := displayName{network: "unix"}
	num, scr, dotted := strings.Cut(s[colon+1:], ".")
	var err error
	if d.number, err = decimal(num, maxDisplayNumber); err != nil {
		return bad("display number " + err.Error())
	}
	if dotted {
		if d.screen, err = decimal(scr, maxScreenNumber); err != nil {
			return bad("screen number " + err.Error())
		}
	}
	if s[0] == '/' {
		d.socket = s[:colon]
		return d, nil
	}
	proto, host := "", s[:colon]
	if slash := strings.LastIndexByte(host, '/'); slash >= 0 {
		proto, host = host[:slash], host[slash+1:]
	}
	if strings.HasSuffix(host, ":") {
		return bad("DECnet names (host::N) are not supported")
	}
	if inner, ok := strings.CutPrefix(host, "["); ok && strings.HasSuffix(inner, "]") {
		host = strings.TrimSuffix(inner, "]") // "[::1]:0" as well as "::1:0"
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return bad("brackets hold an IPv6 address")
		}
	}
	switch proto {
	case "":
		if host == "" || host == "unix" {
			return d, nil
		}
		d.network = "tcp"
	case "unix":
		if host != "" && host != "unix" {
			return bad("protocol unix names the local socket, not host " + strconv.Quote(host))
		}
		return d, nil
	case "tcp", "inet":
		d.network = "tcp"
	case "inet6":
		d.network = "tcp6"
	default:
		return bad("unknown protocol " + strconv.Quote(proto))
	}
	if host == "" {
		return bad("protocol " + proto + " needs a host")
	}
	if !validHost(host) {
		return bad("host " + strconv.Quote(host) + " is neither a host name nor an IP address")
	}
	d.host = host
	return d, nil
}

// validHost reports whether host is an IP address or a DNS name.
func validHost(host string) bool {
	if net.ParseIP(host) != nil {
		return true
	}
	if len(host) > 253 {
		return false
	}
	for _, c := range []byte(host) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// decimal parses 1-5 ASCII digits no greater than limit.
func decimal(s string, limit int) (int, error) {
	if s == "" {
		return 0, errors.New("is missing")
	}
	if len(s) > 5 {
		return 0, fmt.Errorf("%q is too long", s)
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a decimal number", s)
		}
		n = n*10 + int(c-'0')
	}
	if n > limit {
		return 0, fmt.Errorf("%d is over %d", n, limit)
	}
	return n, nil
}

// addresses are where the display listens, in the order to try them.
// For a local display that is the socket file and, on Linux, the abstract
// socket of the same name, which a server also opens (libxcb tries it
// first). The file comes first here: it lives in the daemon's mount
// namespace, as DISPLAY means, while abstract sockets are shared by a
// network namespace, where another server of the same number may listen
// (a container on the host network); the abstract one is the fallback for
// a server whose socket file is missing (a private /tmp, a removed file).
func (d displayName) addresses() []string {
	switch {
	case d.network != "unix":
		return []string{net.JoinHostPort(d.host, strconv.Itoa(x11TCPBase+d.number))}
	case d.socket != "":
		return []string{d.socket + ":" + strconv.Itoa(d.number)}
	}
	path := x11SocketDir + strconv.Itoa(d.number)
	if runtime.GOOS == "linux" {
		return []string{path, "@" + path}
	}
	return []string{path}
}

// setupConn is the socket as xgb sees it: its first Write, the connection
// setup request, goes out with the daemon's credentials in place of the
// ones xgb found; every later Write passes through.
type setupConn struct {
	net.Conn
	creds xcredentials
	// sent is set by the handshake's one Write, before xgb starts the
	// goroutine that makes every later one.
	sent bool
}

func (c *setupConn) Write(p []byte) (int, error) {
	if c.sent {
		return c.Conn.Write(p)
	}
	c.sent = true
	req, err := setupWithAuth(p, c.creds.name, c.creds.data)
	if err != nil {
		return 0, err
	}
	if _, err := c.Conn.Write(req); err != nil {
		return 0, err
	}
	return len(p), nil
}

// setupRequestHeader is the fixed part of a connection setup request:
// byte order, unused, major and minor version, the lengths of the auth
// name and data, unused; the padded name and data follow.
const setupRequestHeader = 12

// setupWithAuth returns the connection setup request req with its
// authorization name and data replaced. req must be what xgb writes: a
// little-endian ('l') request for protocol 11.0 whose length is exactly
// that of its header and padded auth fields; anything else is refused, as
// it would mean an xgb this code was not written for.
func setupWithAuth(req []byte, name string, data []byte) ([]byte, error) {
	if len(req) < setupRequestHeader || req[0] != 'l' || req[1] != 0 ||
		binary.LittleEndian.Uint16(req[2:]) != 11 || binary.LittleEndian.Uint16(req[4:]) != 0 {
		return nil, fmt.Errorf("the X client library wrote an unexpected connection setup (%d bytes); this xgb version is not supported", len(req))
	}
	n, m := int(binary.LittleEndian.Uint16(req[6:])), int(binary.LittleEndian.Uint16(req[8:]))
	if len(req) != setupRequestHeader+pad4(n)+pad4(m) {
		return nil, fmt.Errorf("the X client library wrote a connection setup of %d bytes for auth fields of %d and %d; this xgb version is not supported", len(req), n, m)
	}
	if len(name) > 0xffff || len(data) > 0xffff {
		return nil, fmt.Errorf("X authorization of %d+%d bytes does not fit the connection setup", len(name), len(data))
	}
	out := make([]byte, setupRequestHeader+pad4(len(name))+pad4(len(data)))
	copy(out, req[:6])
	binary.LittleEndian.PutUint16(out[6:], uint16(len(name)))
	binary.LittleEndian.PutUint16(out[8:], uint16(len(data)))
	copy(out[setupRequestHeader:], name)
	copy(out[setupRequestHeader+pad4(len(name)):], data)
	return out, nil
}

func pad4(n int) int { return (n + 3) &^ 3 }

// dialX connects to the X display named display, authenticating with the
// Xauthority file at xauthority ("" = $XAUTHORITY or ~/.Xauthority), within
// ctx and dialTimeout. It returns xgb's connection and the socket under it,
// which the caller closes to end the connection at once. Its errors are
// *unavailable when the display cannot be reached or refuses the daemon,
// else a timeout or cancelled api error.
func dialX(ctx context.Context, display, xauthority string) (*xgb.Conn, net.Conn, error) {
	d, err := parseDisplay(display)
	if err != nil {
		return nil, nil, &unavailable{err.Error()}
	}
	deadline := time.Now().Add(dialTimeout)
	callerBound := false // the caller's deadline comes first
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline, callerBound = dl, true
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	sock, err := dialSocket(dctx, d)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, dialCtxErr(ctx, display)
		}
		return nil, nil, &unavailable{fmt.Sprintf("X display %s refused the connection (%v); check that the X server runs and DISPLAY is right", display, err)}
	}
	hostname, _ := os.Hostname()
	creds := lookupCredentials(xauthorityPath(xauthority, os.Getenv), authAddrOf(sock, hostname), d.number)
	// The handshake is bounded by the socket's deadline, and ended at once
	// by a cancel: xgb reads the setup reply itself and has no context.
	_ = sock.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = sock.SetDeadline(time.Unix(1, 0)) })
	c, err := xgb.NewConnNet(&setupConn{Conn: sock, creds: creds})
	if !stop() || err != nil {
		_ = sock.Close()
		if c != nil {
			c.Close()
		}
		switch {
		case ctx.Err() != nil:
			return nil, nil, dialCtxErr(ctx, display)
		case errors.Is(err, os.ErrDeadlineExceeded) && callerBound:
			return nil, nil, api.Errorf(api.KindTimeout, "connect to X display %s: %w", display, context.DeadlineExceeded)
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Not unavailable: the server runs (it took the connection) but
			// is stopped or grabbed, which may pass; the next call dials again.
			return nil, nil, api.Errorf(api.KindTimeout, "X display %s accepted the connection but did not answer within %s (stopped, or grabbed by another client)", display, dialTimeout)
		case strings.Contains(err.Error(), "authentication refused"): // xgb's words for a Failed setup reply
			return nil, nil, &unavailable{fmt.Sprintf("X display %s refused the connection: %s; %s (set XAUTHORITY to the file holding the display's cookie)",
				display, strings.TrimSpace(err.Error()), creds.note)}
		}
		return nil, nil, &unavailable{fmt.Sprintf("X display %s refused the connection (%v); check that the X server runs and DISPLAY is right", display, err)}
	}
	_ = sock.SetDeadline(time.Time{})
	c.DisplayNumber = d.number
	if roots := len(xproto.Setup(c).Roots); d.screen >= roots {
		_ = sock.Close()
		c.Close()
		return nil, nil, &unavailable{fmt.Sprintf("X display %s has no screen %d (it has %d)", display, d.screen, roots)}
	}
	c.DefaultScreen = d.screen
	return c, sock, nil
}

// closeAndWait ends a connection made by dialX that has no event loop of
// its own, at once (closing the socket ends xgb's goroutines even when the
// server stopped answering), and returns when xgb's reader has stopped.
// xgb keeps extension event and error decoders in package-level maps that
// a later connection's setup writes; a reader still running could race
// with that write.
func closeAndWait(c *xgb.Conn, sock net.Conn) {
	c.Close()
	_ = sock.Close()
	for {
		if ev, err := c.WaitForEvent(); ev == nil && err == nil {
			return // the event channel is closed: the reader has returned
		}
	}
}

// dialSocket connects to the first of d's addresses that answers; when
// none does, the error is the first address's.
func dialSocket(ctx context.Context, d displayName) (net.Conn, error) {
	var dialer net.Dialer
	var first error
	for _, addr := range d.addresses() {
		conn, err := dialer.DialContext(ctx, d.network, addr)
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil || !(errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) {
			break
		}
	}
	return nil, first
}

// dialCtxErr is the answer of a dial whose caller's context ended.
func dialCtxErr(ctx context.Context, display string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return api.Errorf(api.KindTimeout, "connect to X display %s: %w", display, ctx.Err())
	}
	return api.Errorf(api.KindCancelled, "connect to X display %s: %w", display, ctx.Err())
}
