package pulse

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultPort is the native protocol's TCP port.
const DefaultPort = 4713

// maxServerEntries bounds the addresses one server string may list.
const maxServerEntries = 16

// Address is where a server listens.
type Address struct {
	Network string // "unix", "tcp", "tcp4" or "tcp6"
	Addr    string // a socket path, or host:port
}

// String is the address in the server string syntax ("unix:/path").
func (a Address) String() string { return a.Network + ":" + a.Addr }

// Environment is what the server and cookie lookup read from the machine,
// apart so that a test can give its own.
type Environment struct {
	Getenv func(string) string
	UID    int
	// Hostname and MachineID say which "{ID}" prefixes of a server string
	// name this machine.
	Hostname, MachineID string
}

// HostEnvironment is this process's environment.
func HostEnvironment() Environment {
	host, _ := os.Hostname()
	id, _ := os.ReadFile("/etc/machine-id")
	return Environment{Getenv: os.Getenv, UID: os.Getuid(), Hostname: host, MachineID: strings.TrimSpace(string(id))}
}

// Addresses answers where to look for the server, in order, as libpulse
// does: server when set, else $PULSE_SERVER, else the user's socket
// ($XDG_RUNTIME_DIR/pulse/native, then /run/user/UID/pulse/native) and
// the system-wide one (/var/run/pulse/native). libpulse's client.conf and
// the X11 root window's PULSE_SERVER property are not read.
func (e Environment) Addresses(server string) ([]Address, error) {
	if server == "" {
		server = e.Getenv("PULSE_SERVER")
	}
	if server != "" {
		return e.ParseServer(server)
	}
	var out []Address
	add := func(path string) {
		a := Address{Network: "unix", Addr: path}
		for _, b := range out {
			if b == a {
				return
			}
		}
		out = append(out, a)
	}
	if dir := e.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(dir) {
		add(filepath.Join(dir, "pulse", "native"))
	}
	add(fmt.Sprintf("/run/user/%d/pulse/native", e.UID))
	add("/var/run/pulse/native")
	return out, nil
}

// ParseServer reads a server string ($PULSE_SERVER's syntax): addresses
// separated by white space, each "unix:PATH" or an absolute path,
// "tcp:HOST[:PORT]" (tcp4:, tcp6:) or a bare HOST[:PORT], optionally
// after "{ID}", the machine (host name or machine id) it is meant for;
// entries for another machine are left out.
func (e Environment) ParseServer(s string) ([]Address, error) {
	var out []Address
	for _, entry := range strings.Fields(s) {
		if len(out) == maxServerEntries {
			return nil, fmt.Errorf("server string %q lists more than %d addresses", s, maxServerEntries)
		}
		if strings.HasPrefix(entry, "{") {
			end := strings.IndexByte(entry, '}')
			if end < 0 {
				return nil, fmt.Errorf("server string entry %q: no closing }", entry)
			}
			id := entry[1:end]
			entry = entry[end+1:]
			if id != e.Hostname && id != e.MachineID {
				continue
			}
		}
		a, err := parseAddress(entry)
		if err != nil {
			return nil, fmt.Errorf("server string entry %q: %w", entry, err)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("server string %q names no address of this machine", s)
	}
	return out, nil
}

func parseAddress(s string) (Address, error) {
	if strings.HasPrefix(s, "/") {
		return Address{Network: "unix", Addr: s}, nil
	}
	network, rest := "tcp", s
	for _, p := range []string{"unix", "tcp4", "tcp6", "tcp"} {
		if r, ok := strings.CutPrefix(s, p+":"); ok {
			network, rest = p, r
			break
		}
	}
	if network == "unix" {
		if !strings.HasPrefix(rest, "/") {
			return Address{}, fmt.Errorf("want an absolute socket path after unix:")
		}
		return Address{Network: "unix", Addr: rest}, nil
	}
	if rest == "" {
		return Address{}, errors.New("no host")
	}
	host, port := rest, strconv.Itoa(DefaultPort)
	if h, p, err := net.SplitHostPort(rest); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
		host = rest[1 : len(rest)-1]
	} else if strings.Count(rest, ":") > 1 {
		host = rest // a bare IPv6 address
	} else if strings.Contains(rest, ":") {
		return Address{}, err
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return Address{}, fmt.Errorf("bad port %q", port)
	}
	if host == "" || strings.ContainsAny(host, "/[]") {
		return Address{}, fmt.Errorf("bad host %q", host)
	}
	return Address{Network: network, Addr: net.JoinHostPort(host, port)}, nil
}

// Cookie reads the authentication cookie as libpulse finds it:
// $PULSE_COOKIE, else $XDG_CONFIG_HOME/pulse/cookie (~/.config when
// unset), else ~/.pulse-cookie. It answers nil when there is none (the
// server then judges by the peer's user), and the file it read.
func (e Environment) Cookie() (cookie []byte, path string) {
	var paths []string
	if p := e.Getenv("PULSE_COOKIE"); p != "" {
		paths = append(paths, p)
	}
	home := e.Getenv("HOME")
	config := e.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(config) && filepath.IsAbs(home) {
		config = filepath.Join(home, ".config")
	}
	if filepath.IsAbs(config) {
		paths = append(paths, filepath.Join(config, "pulse", "cookie"))
	}
	if filepath.IsAbs(home) {
		paths = append(paths, filepath.Join(home, ".pulse-cookie"))
	}
	for _, p := range paths {
		b, err := readSmall(p, CookieSize+1)
		if err == nil && len(b) == CookieSize {
			return b, p
		}
	}
	return nil, ""
}

// readSmall reads at most limit bytes of the file at path.
func readSmall(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(limit)))
}
