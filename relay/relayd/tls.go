package relayd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// The relay's TLS: a certificate and key from files (--tls-cert,
// --tls-key), or a self-signed pair made once in the data dir and reused
// (--tls-self-signed), whose fingerprint a Space pins. The daemon has the
// same (spacesd/server/tls.go); programs do not share packages, and this
// is the small part the relay needs.
const (
	SelfSignedDir  = "tls"
	SelfSignedCert = "cert.pem"
	SelfSignedKey  = "key.pem"
	// selfSignedValidity is long on purpose: Spaces pin the certificate,
	// and a new one would break every pin.
	selfSignedValidity = 10 * 365 * 24 * time.Hour
)

// TLSConfig is the relay's TLS: 1.2 and up, HTTP/1.1 only (WebSockets
// upgrade from it).
func TLSConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"http/1.1"},
	}
}

// LoadCert loads a PEM certificate (chain) and key, and answers its
// fingerprint ("sha256:<hex>").
func LoadCert(certFile, keyFile string) (tls.Certificate, string, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, "", api.Errorf(api.KindInvalidArgument, "TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return c, api.CertFingerprint(c.Certificate[0]), nil
}

// SelfSigned loads the pair in dataDir/tls, or makes it there first (made).
// The certificate is a leaf (not a CA) for localhost, 127.0.0.1, ::1 and
// hosts. A pair that is there but does not load is an error, never
// replaced: every Space that pinned it would stop trusting the relay.
func SelfSigned(dataDir string, hosts []string) (cert tls.Certificate, fingerprint string, made bool, err error) {
	dir := filepath.Join(dataDir, SelfSignedDir)
	certFile, keyFile := filepath.Join(dir, SelfSignedCert), filepath.Join(dir, SelfSignedKey)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := makeSelfSigned(dataDir, dir, hosts); err != nil {
			return tls.Certificate{}, "", false, err
		}
		made = true
	}
	cert, fingerprint, err = LoadCert(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, "", false, fmt.Errorf("the self-signed pair in %s does not load (remove it to make a new one; Spaces must pin the new): %w", dir, err)
	}
	return cert, fingerprint, made, nil
}

// makeSelfSigned writes the pair in a directory of its own and renames it
// into place: a crash leaves the whole pair or none.
func makeSelfSigned(dataDir, dir string, hosts []string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return api.Errorf(api.KindIO, "make the data dir %s: %w", dataDir, err)
	}
	tmp, err := os.MkdirTemp(dataDir, "."+SelfSignedDir+"-")
	if err != nil {
		return api.Errorf(api.KindIO, "make the TLS pair: %w", err)
	}
	defer os.RemoveAll(tmp)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("make the TLS key: %w", err)
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "cua-relay", Organization: []string{"cua-relay self-signed"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		switch ip := net.ParseIP(h); {
		case h == "" || h == "localhost":
		case ip != nil && !ip.IsUnspecified():
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		case ip == nil:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("make the certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, SelfSignedKey), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return api.Errorf(api.KindIO, "write the TLS key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, SelfSignedCert), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return api.Errorf(api.KindIO, "write the TLS certificate: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return api.Errorf(api.KindIO, "put the TLS pair in place: %w", err)
	}
	return nil
}
