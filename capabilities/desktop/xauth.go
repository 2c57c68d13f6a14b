package desktop

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
)

// The Xauthority file (libXau's format): a sequence of entries, each a
// big-endian 16-bit family followed by four counted fields (address,
// display number, auth name, auth data), each a big-endian 16-bit length
// and that many bytes.
const (
	// familyInternet, familyInternet6, familyLocal and familyWild are the
	// address families of X11/Xauth.h that a lookup can match.
	familyInternet  = 0
	familyInternet6 = 6
	familyLocal     = 256
	familyWild      = 65535

	// authMagicCookie is the one authorization protocol the daemon speaks
	// (as xgb does): a 16-byte secret the server compares.
	authMagicCookie = "MIT-MAGIC-COOKIE-1"

	// maxXauthorityBytes bounds the Xauthority file read at each connect:
	// an entry is ~50 bytes, so this holds tens of thousands of them, and
	// a file named by a stray XAUTHORITY cannot make the daemon read GiBs.
	maxXauthorityBytes = 1 << 20
)

// xauthEntry is one entry of an Xauthority file.
type xauthEntry struct {
	family  uint16
	address []byte
	number  string // display number; "" matches every display
	name    string // authorization protocol, e.g. MIT-MAGIC-COOKIE-1
	data    []byte
}

// parseXauthority reads the entries of an Xauthority file. A malformed or
// truncated entry ends the parse: the entries before it are returned with
// an error saying where, as libXau also stops at the first bad entry and
// still matches the ones it read.
func parseXauthority(b []byte) ([]xauthEntry, error) {
	var out []xauthEntry
	for off := 0; off < len(b); {
		start := off
		if len(b)-off < 2 {
			return out, fmt.Errorf("entry %d at byte %d is truncated", len(out)+1, start)
		}
		e := xauthEntry{family: binary.BigEndian.Uint16(b[off:])}
		off += 2
		var fields [4][]byte
		for i := range fields {
			if len(b)-off < 2 {
				return out, fmt.Errorf("entry %d at byte %d is truncated", len(out)+1, start)
			}
			n := int(binary.BigEndian.Uint16(b[off:]))
			off += 2
			if len(b)-off < n {
				return out, fmt.Errorf("entry %d at byte %d is truncated", len(out)+1, start)
			}
			fields[i] = b[off : off+n : off+n]
			off += n
		}
		e.address, e.number, e.name, e.data = fields[0], string(fields[1]), string(fields[2]), fields[3]
		out = append(out, e)
	}
	return out, nil
}

// xauthAddr is how the X server sees the daemon's connection, which picks
// the Xauthority entries that apply (libxcb's rules): a local socket or a
// loopback TCP connection is family local with the machine's hostname, any
// other TCP connection the peer's IPv4 or IPv6 address.
type xauthAddr struct {
	family  uint16
	address []byte
}

// authAddrOf is the xauthAddr of a connection to the display.
func authAddrOf(conn net.Conn, hostname string) xauthAddr {
	local := xauthAddr{family: familyLocal, address: []byte(hostname)}
	tcp, ok := conn.RemoteAddr().(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return local
	}
	if ip4 := tcp.IP.To4(); ip4 != nil {
		return xauthAddr{family: familyInternet, address: ip4}
	}
	return xauthAddr{family: familyInternet6, address: tcp.IP.To16()}
}

// findCookie returns the first MIT-MAGIC-COOKIE-1 entry that applies to
// display number at addr: its family and address match (or it is a
// wildcard) and its display number is the same (or empty). Entries of
// other protocols are skipped, as libxcb skips those it does not speak.
func findCookie(entries []xauthEntry, addr xauthAddr, number int) (xauthEntry, bool) {
	num := strconv.Itoa(number)
	for _, e := range entries {
		if e.name != authMagicCookie {
			continue
		}
		if e.family != familyWild && (e.family != addr.family || !bytes.Equal(e.address, addr.address)) {
			continue
		}
		if e.number != "" && e.number != num {
			continue
		}
		return e, true
	}
	return xauthEntry{}, false
}

// xauthorityPath is the Xauthority file to read: the one configured, else
// $XAUTHORITY, else $HOME/.Xauthority; "" when none can be named.
func xauthorityPath(configured string, getenv func(string) string) string {
	if configured != "" {
		return configured
	}
	if p := getenv("XAUTHORITY"); p != "" {
		return p
	}
	if home := getenv("HOME"); home != "" {
		return home + "/.Xauthority"
	}
	return ""
}

// xcredentials are what the daemon sends in the connection setup, and
// where they came from, for the message when the server refuses them.
type xcredentials struct {
	name string
	data []byte
	// note says which file was read and what was found, e.g.
	// "no MIT-MAGIC-COOKIE-1 for display 1 in /root/.Xauthority".
	note string
}

// lookupCredentials finds the cookie for display number at addr in the
// Xauthority file at path. A missing or unreadable file, or no matching
// entry, means no credentials: a server without access control still lets
// the daemon in, and one with it refuses with a message naming note.
func lookupCredentials(path string, addr xauthAddr, number int) xcredentials {
	if path == "" {
		return xcredentials{note: "no Xauthority file: XAUTHORITY and HOME are unset"}
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return xcredentials{note: fmt.Sprintf("the Xauthority file %s does not exist", path)}
		}
		return xcredentials{note: fmt.Sprintf("cannot read the Xauthority file: %v", err)}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxXauthorityBytes+1))
	if err != nil {
		return xcredentials{note: fmt.Sprintf("cannot read the Xauthority file %s: %v", path, err)}
	}
	if len(b) > maxXauthorityBytes {
		return xcredentials{note: fmt.Sprintf("the Xauthority file %s is over %d bytes; not read", path, maxXauthorityBytes)}
	}
	entries, perr := parseXauthority(b)
	if e, ok := findCookie(entries, addr, number); ok {
		return xcredentials{name: e.name, data: e.data, note: fmt.Sprintf("sent the MIT-MAGIC-COOKIE-1 for display %d from %s", number, path)}
	}
	note := fmt.Sprintf("no MIT-MAGIC-COOKIE-1 for display %d of this host in %s", number, path)
	if perr != nil {
		note += fmt.Sprintf(" (the file is damaged: %v)", perr)
	}
	return xcredentials{note: note}
}

// WriteCookie writes a new Xauthority file at path (mode 0600, refusing to
// replace anything there) holding one random MIT-MAGIC-COOKIE-1 for every
// display of every host: the file a private X server (StartVirtual with
// Xauthority) and its clients share, so that only they get in.
func WriteCookie(path string) error {
	var cookie [16]byte
	if _, err := rand.Read(cookie[:]); err != nil {
		return err
	}
	var b bytes.Buffer
	put := func(field []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint16(len(field)))
		b.Write(field)
	}
	_ = binary.Write(&b, binary.BigEndian, uint16(familyWild))
	put(nil) // any address
	put(nil) // any display number
	put([]byte(authMagicCookie))
	put(cookie[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
