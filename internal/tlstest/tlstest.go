// Package tlstest makes the TLS material of a test: a certificate
// authority of its own, made in the test, and server certificates it
// signs, so that tests run real TLS without any file from outside.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a test's certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// validity of the test's certificates: the length of any test run.
const validity = 24 * time.Hour

// NewCA makes a certificate authority for the test.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "cua-spacesd test CA " + t.Name()},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("test CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key}
}

// Issue signs a server certificate for hosts (names or IP addresses).
func (ca *CA) Issue(t testing.TB, hosts ...string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, leafTemplate(t, hosts), ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("issue a test certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// WriteCA writes the CA's certificate as PEM into dir and returns its path.
func (ca *CA) WriteCA(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "test-ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// WritePair writes a certificate and its key as PEM files into dir.
func WritePair(t testing.TB, dir string, c tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	var chain []byte
	for _, der := range c.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	if err := os.WriteFile(certFile, chain, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// WriteCAPair writes into dir (made if needed), as cert.pem and key.pem,
// a pair the way cua-spacesd's --tls-self-signed made it before it made
// leaves: a self-signed certificate for localhost and 127.0.0.1 that is
// its own CA (CA:TRUE, keyCertSign). Tests of the daemon's upgrade path
// need one such pair without an older daemon at hand.
func WriteCAPair(t testing.TB, dir string) *x509.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "cua-spacesd test", Organization: []string{"cua-spacesd self-signed"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("a CA-style self-signed pair: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	WritePair(t, dir, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key})
	return cert
}

// SignWith signs a server certificate for hosts with issuer's key, whatever
// issuer is: a test that a certificate cannot act as a CA needs a leaf that
// it signed.
func SignWith(t testing.TB, issuer tls.Certificate, hosts ...string) *x509.Certificate {
	t.Helper()
	parent, err := x509.ParseCertificate(issuer.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, leafTemplate(t, hosts), parent, &key.PublicKey, issuer.PrivateKey)
	if err != nil {
		t.Fatalf("sign a certificate for %v: %v", hosts, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// CountHandshakes makes cfg count the TLS handshakes it is offered (every
// ClientHello, a resumed session's too) and returns the count. cfg must
// have no GetConfigForClient of its own.
func CountHandshakes(cfg *tls.Config) *atomic.Int64 {
	n := &atomic.Int64{}
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		n.Add(1)
		return nil, nil // cfg itself
	}
	return n
}

// leafTemplate is a server certificate for hosts (names or IP addresses),
// valid from an hour ago.
func leafTemplate(t testing.TB, hosts []string) *x509.Certificate {
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Client auth too: relay nodes present theirs both ways on their
		// NATS routes.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl
}
