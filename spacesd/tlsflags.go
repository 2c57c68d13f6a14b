package main

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// tlsFlags are the serve flags of TLS (docs/operations.md).
type tlsFlags struct {
	cert, key  *string
	selfSigned *bool
	renew      *bool
}

func newTLSFlags(fs *flag.FlagSet) tlsFlags {
	return tlsFlags{
		cert: fs.String("tls-cert", "", "serve HTTPS and WSS with this PEM certificate (chain); renewals of the file are picked up"),
		key:  fs.String("tls-key", "", "the PEM private key of --tls-cert"),
		selfSigned: fs.Bool("tls-self-signed", false,
			"serve HTTPS and WSS with a key pair made once in the state directory (tls/) and reused; prints its sha256 fingerprint for clients to pin"),
		renew: fs.Bool("tls-renew", false,
			"with --tls-self-signed: replace a pair an older cua-spacesd made as its own CA with a leaf pair, and print the new fingerprint to pin (a leaf pair is kept)"),
	}
}

func (f tlsFlags) check() error {
	switch {
	case (*f.cert == "") != (*f.key == ""):
		return errors.New("give --tls-cert and --tls-key together")
	case *f.selfSigned && *f.cert != "":
		return errors.New("give --tls-cert/--tls-key or --tls-self-signed, not both")
	case *f.renew && !*f.selfSigned:
		return errors.New("--tls-renew renews the --tls-self-signed pair: give both")
	}
	return nil
}

// config loads the certificate the flags name and prints its fingerprint;
// nil without TLS. addr is the listen address: a self-signed certificate
// names its host, or every address of the machine when it binds them all.
func (f tlsFlags) config(stateDir, addr string, stdout io.Writer, log *slog.Logger) (*tls.Config, error) {
	var certs *server.CertFiles
	var err error
	switch {
	case *f.cert != "":
		certs, err = server.LoadCertFiles(*f.cert, *f.key, log)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "cua-spacesd: TLS certificate %s (%s)\n", certs.Fingerprint(), *f.cert)
	case *f.selfSigned:
		var made, renewed bool
		if *f.renew {
			if renewed, err = server.RenewSelfSigned(stateDir, certHosts(addr)); err != nil {
				return nil, err
			}
		}
		certs, made, err = server.SelfSigned(stateDir, certHosts(addr), log)
		if err != nil {
			return nil, err
		}
		how := "reused"
		switch {
		case renewed:
			how = "renewed: it replaces a pair that was a CA, so every bridge must pin the new fingerprint"
			log.Warn("TLS self-signed pair renewed: register the new fingerprint with every bridge (cua-bridge space add)", "fingerprint", certs.Fingerprint())
		case made:
			how = "made"
		}
		dir := filepath.Join(stateDir, server.SelfSignedDir)
		fmt.Fprintf(stdout, "cua-spacesd: TLS self-signed certificate %s (%s, in %s)\n", certs.Fingerprint(), how, dir)
		fmt.Fprintf(stdout, "cua-spacesd: pin it with: cua-bridge space add NAME https://HOST:PORT --fingerprint %s\n", certs.Fingerprint())
		if cert, _ := server.ReadSelfSigned(stateDir); cert != nil && server.IsCertAuthority(cert) {
			fmt.Fprintf(stdout, "cua-spacesd: warning: %s\n", server.SelfSignedCAWarning)
		}
	default:
		return nil, nil
	}
	log.Info("TLS", "fingerprint", certs.Fingerprint(), "self_signed", *f.selfSigned)
	return server.NewTLSConfig(certs.Certificate), nil
}

// certHosts are the names a self-signed certificate is made for: the
// listen host, or the machine's addresses when it listens on all of them.
func certHosts(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		return []string{host}
	}
	var out []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			out = append(out, n.IP.String())
		}
	}
	return out
}

// fingerprintMain is `cua-spacesd fingerprint`: the fingerprint of the
// certificate the daemon serves, for registering it with a bridge without
// reading the daemon's output.
func fingerprintMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fingerprint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", filesvc.DefaultStateDir(), "the state directory of a daemon run with --tls-self-signed")
	certFile := fs.String("tls-cert", "", "a certificate file (PEM) instead of the self-signed one")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p := *certFile
	if p == "" {
		p = filepath.Join(*stateDir, server.SelfSignedDir, server.SelfSignedCert)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		fmt.Fprintf(stderr, "cua-spacesd fingerprint: %v (has the daemon run with --tls-self-signed and this --state-dir?)\n", err)
		return 1
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		fmt.Fprintf(stderr, "cua-spacesd fingerprint: %s holds no PEM certificate\n", p)
		return 1
	}
	fmt.Fprintln(stdout, api.CertFingerprint(block.Bytes))
	return 0
}
