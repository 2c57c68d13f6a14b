package client

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/trycua/cua-spacesd/api"
)

// TLS says how a client trusts the certificate of a daemon it reaches over
// https: by the system's roots (the zero TLS), by the CAs of a PEM file, or
// by the certificate's pinned fingerprint (api.CertFingerprint), as for the
// pair a daemon made itself with --tls-self-signed. With both, the chain
// must verify against the CA file and the certificate match the pin.
type TLS struct {
	CAFile      string
	Fingerprint string
}

// IsZero reports whether t says nothing beyond the system's roots.
func (t TLS) IsZero() bool { return t == TLS{} }

// WithTLS makes the client trust the daemon's certificate as t says.
func WithTLS(t TLS) Option { return func(o *options) { o.tls = t } }

// PinMismatchError is the failure of a connection whose certificate is not
// the pinned one.
type PinMismatchError struct {
	Got, Want string
}

func (e *PinMismatchError) Error() string {
	return fmt.Sprintf("the daemon's certificate is %s, not the pinned %s", e.Got, e.Want)
}

// tlsConfig builds the client side of t.
func (t TLS) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, api.Errorf(api.KindInvalidArgument, "CA file %s: %w", t.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, api.Errorf(api.KindInvalidArgument, "CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.Fingerprint != "" {
		want, err := api.ParseFingerprint(t.Fingerprint)
		if err != nil {
			return nil, err
		}
		// The pin is the trust: a self-signed certificate has no chain to
		// verify, and its names need not match how the Space is reached
		// (an address behind a NAT, a tunnel). With a CA file as well, the
		// chain is verified too.
		cfg.InsecureSkipVerify = t.CAFile == ""
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the daemon sent no certificate")
			}
			got := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if got != want {
				return &PinMismatchError{Got: api.CertFingerprint(cs.PeerCertificates[0].Raw), Want: api.FingerprintPrefix + fmt.Sprintf("%x", want)}
			}
			return nil
		}
	}
	return cfg, nil
}

// tlsError names a certificate the client does not trust, which no retry
// fixes, in words that say what to do.
func tlsError(err error) *api.Error {
	var pin *PinMismatchError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &pin):
		return (&api.Error{Kind: api.KindEnv, Message: "TLS: " + pin.Error(),
			Hint: "if the Space made a new key pair, re-add it with the fingerprint cua-spacesd printed at start-up; otherwise someone is in between"}).WithCause(err)
	case errors.As(err, &verify):
		return (&api.Error{Kind: api.KindEnv, Message: "TLS: the daemon's certificate is not trusted: " + verify.Err.Error(),
			Hint: "pin the certificate (--fingerprint sha256:..., printed by cua-spacesd) or give the CA that signed it (--ca-file)"}).WithCause(err)
	}
	return nil
}
