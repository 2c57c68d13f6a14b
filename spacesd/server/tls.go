package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/selfsigned"
)

// TLS of the daemon: HTTPS and WSS on its one port, from a certificate and
// key given as files (--tls-cert, --tls-key) or from a self-signed pair the
// daemon makes once in its state directory and reuses (--tls-self-signed),
// whose fingerprint a bridge pins.

// Self-signed certificate files, under the state directory.
const (
	SelfSignedDir  = selfsigned.Dir
	SelfSignedCert = selfsigned.CertFile
	SelfSignedKey  = selfsigned.KeyFile
	// certPollInterval bounds how often the certificate files are checked
	// for a renewal (at a handshake, never more than once per interval).
	certPollInterval = 10 * time.Second
)

// NewTLSConfig is the daemon's TLS: 1.2 and up, only AEAD suites with
// forward secrecy (TLS 1.3's are fixed and all good), and HTTP/1.1 only,
// since WebSockets (streams, the computer-server bus) upgrade from it.
// getCert serves the certificate at each handshake.
func NewTLSConfig(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		NextProtos:     []string{"http/1.1"},
		GetCertificate: getCert,
	}
}

// CertFiles serves a certificate and key from files, and follows their
// renewal (certbot, a secret manager): a handshake after the files changed
// loads them again; a pair that does not load keeps the old one in use.
type CertFiles struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string
	checked time.Time
}

// LoadCertFiles loads a PEM certificate (chain) and its key.
func LoadCertFiles(certFile, keyFile string, log *slog.Logger) (*CertFiles, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &CertFiles{certFile: certFile, keyFile: keyFile, log: log}
	cert, stamp, err := c.load()
	if err != nil {
		return nil, err
	}
	c.cert, c.stamp, c.checked = cert, stamp, time.Now()
	return c, nil
}

func (c *CertFiles) load() (*tls.Certificate, string, error) {
	stamp := fileStamp(c.certFile) + fileStamp(c.keyFile)
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("TLS certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	return &cert, stamp, nil
}

// fileStamp changes when the file is replaced or written.
func fileStamp(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d/%d", fi.ModTime().UnixNano(), fi.Size())
}

// Certificate is the certificate in use, loaded again when its files
// changed; it is a tls.Config's GetCertificate.
func (c *CertFiles) Certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) < certPollInterval {
		return c.cert, nil
	}
	c.checked = time.Now()
	if stamp := fileStamp(c.certFile) + fileStamp(c.keyFile); stamp == c.stamp {
		return c.cert, nil
	}
	cert, stamp, err := c.load()
	if err != nil {
		// Half-written by a renewal, say: keep serving the old one, and
		// look again at the next interval.
		c.log.Warn("TLS certificate changed but does not load; serving the previous one", "err", err)
		return c.cert, nil
	}
	c.cert, c.stamp = cert, stamp
	c.log.Info("TLS certificate reloaded", "fingerprint", api.CertFingerprint(cert.Certificate[0]))
	return c.cert, nil
}

// Fingerprint is the fingerprint of the certificate in use.
func (c *CertFiles) Fingerprint() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return api.CertFingerprint(c.cert.Certificate[0])
}

// SelfSigned loads the daemon's self-signed pair from stateDir/tls, or makes
// one there when there is none (made reports which). The certificate is a
// leaf (not a CA) naming localhost, the host's name and the given hosts
// (addresses or names); a client pins its fingerprint. A pair made by an
// older daemon as its own CA keeps serving, so that the pins of registered
// Spaces hold, with a warning: RenewSelfSigned replaces it.
// A pair that is there but does not load is an error, not replaced: every
// bridge that pinned it would stop trusting the daemon.
func SelfSigned(stateDir string, hosts []string, log *slog.Logger) (c *CertFiles, made bool, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stateDir == "" {
		return nil, false, errors.New("--tls-self-signed keeps its key pair in the state directory: give --state-dir")
	}
	dir := filepath.Join(stateDir, SelfSignedDir)
	certFile, keyFile := filepath.Join(dir, SelfSignedCert), filepath.Join(dir, SelfSignedKey)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := selfsigned.Make(stateDir, program, hosts); err != nil {
			return nil, false, err
		}
		made = true
	}
	c, err = LoadCertFiles(certFile, keyFile, log)
	if err != nil {
		return nil, false, fmt.Errorf("the self-signed pair in %s does not load (remove the directory to make a new one; bridges that pinned the old one must pin the new): %w", dir, err)
	}
	if leaf, err := x509.ParseCertificate(c.cert.Certificate[0]); err == nil && IsCertAuthority(leaf) {
		log.Warn(SelfSignedCAWarning, "dir", dir, "fingerprint", c.Fingerprint())
	}
	return c, made, nil
}

// SelfSignedCAWarning is logged (and said by doctor) of a self-signed pair
// that is its own CA.
const SelfSignedCAWarning = "the self-signed TLS certificate is a CA (made by an older cua-spacesd): whoever holds its key can sign a certificate for any name that clients trusting the file accept; " +
	"replace it with cua-spacesd serve --tls-self-signed --tls-renew, then register the new fingerprint with cua-bridge space add"

// IsCertAuthority reports whether cert may sign other certificates: a CA
// by its basic constraints, or a key allowed to sign certificates.
func IsCertAuthority(cert *x509.Certificate) bool {
	return (cert.BasicConstraintsValid && cert.IsCA) || cert.KeyUsage&x509.KeyUsageCertSign != 0
}

// ReadSelfSigned reads the certificate of the self-signed pair in
// stateDir; nil, without an error, when there is none.
func ReadSelfSigned(stateDir string) (*x509.Certificate, error) {
	p := filepath.Join(stateDir, SelfSignedDir, SelfSignedCert)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", p)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return cert, nil
}

// RenewSelfSigned replaces a self-signed pair in stateDir that is a CA with
// a new leaf pair (renewed reports it); a leaf pair, or none, is left as it
// is, so that the flag asking for this can stay in a unit file without
// changing the fingerprint at every start. The fingerprint changes: every
// bridge that pinned the old one must pin the new.
func RenewSelfSigned(stateDir string, hosts []string) (renewed bool, err error) {
	if stateDir == "" {
		return false, errors.New("--tls-renew renews the pair in the state directory: give --state-dir")
	}
	old, err := ReadSelfSigned(stateDir)
	if err != nil || old == nil || !IsCertAuthority(old) {
		return false, err
	}
	dir := filepath.Join(stateDir, SelfSignedDir)
	tmp, err := os.MkdirTemp(stateDir, "."+SelfSignedDir+"-")
	if err != nil {
		return false, fmt.Errorf("renew the TLS pair: %w", err)
	}
	defer os.RemoveAll(tmp) // the old pair, once swapped out
	fresh := filepath.Join(tmp, "new")
	if err := os.Mkdir(fresh, 0o700); err != nil {
		return false, fmt.Errorf("renew the TLS pair: %w", err)
	}
	if err := selfsigned.Write(fresh, program, hosts); err != nil {
		return false, err
	}
	// A directory cannot be renamed over a full one: the old pair moves
	// aside first. A crash between the two leaves no pair, and the next
	// start makes one; the fingerprint was changing anyway.
	if err := os.Rename(dir, filepath.Join(tmp, "old")); err != nil {
		return false, fmt.Errorf("move the old TLS pair aside: %w", err)
	}
	if err := os.Rename(fresh, dir); err != nil {
		return false, fmt.Errorf("put the new TLS pair in place: %w", err)
	}
	return true, nil
}

// program names the daemon in its self-signed certificate.
const program = "cua-spacesd"
