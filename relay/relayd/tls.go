package relayd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/selfsigned"
)

// The relay's TLS: a certificate and key from files (--tls-cert,
// --tls-key), or a self-signed pair made once in the data dir and reused
// (--tls-self-signed, internal/selfsigned, as the daemon's), whose
// fingerprint a Space pins.
const (
	SelfSignedDir  = selfsigned.Dir
	SelfSignedCert = selfsigned.CertFile
	SelfSignedKey  = selfsigned.KeyFile
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
		if err := selfsigned.Make(dataDir, "cua-relay", hosts); err != nil {
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
