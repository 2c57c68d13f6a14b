package main

import (
	"flag"
	"net"
	"strconv"
	"strings"

	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// media holds the serve flags of the streams' media (docs/operations.md).
type media struct {
	fs     *flag.FlagSet
	port   *int
	iceTCP *string
	natIPs *string
}

// mediaFlags defines the flags on fs; defaultPort is --media-port's default
// (streamsvc.DefaultMediaPort; a test gives a port it holds).
func mediaFlags(fs *flag.FlagSet, defaultPort int) media {
	return media{
		fs: fs,
		port: fs.Int("media-port", defaultPort,
			"UDP port every stream viewer's WebRTC traffic shares, on the --listen address (0 = any free port)"),
		iceTCP: fs.String("media-ice-tcp", "",
			"also offer WebRTC over TCP on this address (HOST:PORT), for viewers whose UDP is blocked (empty = off)"),
		natIPs: fs.String("media-nat-ip", "",
			"public IP address(es), comma-separated, of a guest behind a 1:1 NAT, announced to viewers instead of its own"),
	}
}

// options place the media UDP socket on the HTTP listen address's host:
// a daemon bound to loopback keeps its media on loopback too. listenPort is
// the port the daemon's listener got.
//
// The default port is only a default: when another daemon of the machine
// holds it, the media takes the number of the listen port (one number per
// daemon to open in a firewall), then any free port. A --media-port given
// is what the operator asked for, and is used or reported, never replaced.
func (m media) options(listen string, listenPort int) streamsvc.Options {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = ""
	}
	o := streamsvc.Options{UDPAddr: net.JoinHostPort(host, strconv.Itoa(*m.port)), ICETCPAddr: *m.iceTCP}
	if !m.given() && *m.port != 0 {
		if listenPort != 0 && listenPort != *m.port {
			o.UDPFallbacks = append(o.UDPFallbacks, net.JoinHostPort(host, strconv.Itoa(listenPort)))
		}
		o.UDPFallbacks = append(o.UDPFallbacks, net.JoinHostPort(host, "0"))
	}
	for _, ip := range strings.Split(*m.natIPs, ",") {
		if ip = strings.TrimSpace(ip); ip != "" {
			o.NAT1To1IPs = append(o.NAT1To1IPs, ip)
		}
	}
	return o
}

// given reports whether --media-port was on the command line.
func (m media) given() bool {
	given := false
	m.fs.Visit(func(f *flag.Flag) { given = given || f.Name == "media-port" })
	return given
}
