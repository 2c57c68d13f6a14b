// Package loopback says whether a name, an address, a Host header or a
// browser Origin stays on this machine. The bridge and the daemon both judge
// browsers by it, so a DNS-rebinding or cross-site request meets the same
// rule on either side.
package loopback

import (
	"net"
	"net/url"
	"strings"
)

// Name reports whether host (no port) names this machine for certain:
// "localhost" or a loopback IP. Any other name may resolve anywhere, which
// is what DNS rebinding exploits.
func Name(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Host reports whether a Host header ("name:port" or "name") is a loopback name.
func Host(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return Name(host)
}

// Addr reports whether a listen address ("host:port") binds loopback only.
func Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return Name(host)
}

// Origin reports whether a browser Origin header ("http://localhost:5173")
// is a loopback origin. An absent Origin (a client that is no browser) is
// not judged here: callers decide what it means.
func Origin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return Name(u.Hostname())
}

// SameOrigin reports whether a browser Origin is the origin of a request
// that arrived with the given Host header, over TLS or not: the daemon's
// own pages (the viewer) are that origin, and no other page is.
func SameOrigin(origin, host string, tls bool) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(u.Host, withDefaultPort(host, scheme))
}

// withDefaultPort leaves host as a browser writes it in an Origin: without
// the port when it is the scheme's default.
func withDefaultPort(host, scheme string) string {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		return host
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return h
	}
	return host
}
