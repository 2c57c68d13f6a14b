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
	port   *int
	iceTCP *string
	natIPs *string
}

func mediaFlags(fs *flag.FlagSet) media {
	return media{
		port: fs.Int("media-port", streamsvc.DefaultMediaPort,
			"UDP port every stream viewer's WebRTC traffic shares, on the --listen address (0 = any free port)"),
		iceTCP: fs.String("media-ice-tcp", "",
			"also offer WebRTC over TCP on this address (HOST:PORT), for viewers whose UDP is blocked (empty = off)"),
		natIPs: fs.String("media-nat-ip", "",
			"public IP address(es), comma-separated, of a guest behind a 1:1 NAT, announced to viewers instead of its own"),
	}
}

// options place the media UDP socket on the HTTP listen address's host:
// a daemon bound to loopback keeps its media on loopback too.
func (m media) options(listen string) streamsvc.Options {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = ""
	}
	o := streamsvc.Options{UDPAddr: net.JoinHostPort(host, strconv.Itoa(*m.port)), ICETCPAddr: *m.iceTCP}
	for _, ip := range strings.Split(*m.natIPs, ",") {
		if ip = strings.TrimSpace(ip); ip != "" {
			o.NAT1To1IPs = append(o.NAT1To1IPs, ip)
		}
	}
	return o
}
