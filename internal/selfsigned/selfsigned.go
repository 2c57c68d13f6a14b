// Package selfsigned makes the self-signed TLS pair a program keeps in its
// state directory and whose fingerprint its clients pin: the daemon's
// (a bridge pins it) and the relay's (a Space pins it).
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The pair's files, in Dir under the state directory.
const (
	Dir      = "tls"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
	// Validity is long on purpose: clients pin the certificate itself,
	// not a chain with dates, and a new pair would break every pin.
	Validity = 10 * 365 * 24 * time.Hour
)

// Make makes a pair in stateDir/Dir for program: written in a directory of
// its own beside it, synced, and renamed into place, so that a crash leaves
// the whole pair or none; of two programs starting at once, one pair wins
// and both load it.
func Make(stateDir, program string, hosts []string) error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("make the state directory %s: %w", stateDir, err)
	}
	tmp, err := os.MkdirTemp(stateDir, "."+Dir+"-")
	if err != nil {
		return fmt.Errorf("make the TLS pair: %w", err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	if err := Write(tmp, program, hosts); err != nil {
		return err
	}
	dir := filepath.Join(stateDir, Dir)
	if err := os.Rename(tmp, dir); err != nil {
		// Another program's pair got there first: that one is loaded.
		if _, statErr := os.Stat(filepath.Join(dir, CertFile)); statErr != nil {
			return fmt.Errorf("put the TLS pair in place: %w", err)
		}
	}
	return nil
}

// Write writes a new pair into dir, each file synced.
func Write(dir, program string, hosts []string) error {
	certPEM, keyPEM, err := Pair(program, hosts, time.Now())
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(dir, KeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	return writeSynced(filepath.Join(dir, CertFile), certPEM, 0o644)
}

func writeSynced(p string, b []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// Pair makes an ECDSA P-256 key and a leaf certificate of it, signed by
// itself, for localhost, the host's name and hosts (addresses or names).
// It is not a CA (no keyCertSign, basic constraints CA:FALSE): a client
// that trusts the file trusts this certificate, never one signed with its
// key. An ECDSA key only signs, so digitalSignature is its one key usage.
func Pair(program string, hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("make the TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("make the certificate's serial: %w", err)
	}
	name, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: program + " " + name, Organization: []string{program + " self-signed"}},
		NotBefore:             now.Add(-time.Hour), // a clock a little behind
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  false,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range append([]string{name}, hosts...) {
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
		return nil, nil, fmt.Errorf("make the certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the TLS key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
