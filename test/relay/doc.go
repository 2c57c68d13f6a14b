// Package relay tests cua-relay end to end: a real relay (its embedded
// NATS JetStream store, real TLS from a CA the test makes), real Spaces
// (cua-spacesd with its relay_attach service, its HTTP port on loopback
// only) and the real bridge (its tools and CLI), all inside a network
// namespace whose only interface is lo. Faults come from a TCP proxy
// (internal/faultproxy) between the Space and the relay. It holds only
// tests and benchmarks (make test-relay runs the one, make bench the other).
package relay
