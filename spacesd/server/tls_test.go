package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// tlsDaemon serves a daemon over TLS with a certificate of a test CA for
// 127.0.0.1, and answers the CA's file and the certificate's fingerprint.
func tlsDaemon(t *testing.T, trust func(caFile, fingerprint string) client.TLS) (*spacesdtest.Daemon, string, string) {
	t.Helper()
	ca := tlstest.NewCA(t)
	cert := ca.Issue(t, "127.0.0.1", "localhost")
	caFile := ca.WriteCA(t, t.TempDir())
	fp := api.CertFingerprint(cert.Certificate[0])
	cfg := server.NewTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil })
	d := spacesdtest.Start(t, spacesdtest.Options{TLS: cfg, ClientTLS: trust(caFile, fp)})
	return d, caFile, fp
}

// Over TLS the whole API answers as over HTTP: calls, WebSocket streams,
// the connection bounds, and the browser check (whose own origin is then
// https://). A client trusts the daemon by a CA file or by a pinned
// fingerprint.
func TestTLSServesEverything(t *testing.T) {
	for name, trust := range map[string]func(caFile, fp string) client.TLS{
		"ca file":     func(ca, _ string) client.TLS { return client.TLS{CAFile: ca} },
		"pin":         func(_, fp string) client.TLS { return client.TLS{Fingerprint: fp} },
		"ca file+pin": func(ca, fp string) client.TLS { return client.TLS{CAFile: ca, Fingerprint: fp} },
	} {
		t.Run(name, func(t *testing.T) {
			d, _, _ := tlsDaemon(t, trust)
			if !strings.HasPrefix(d.URL, "https://") {
				t.Fatalf("URL %s", d.URL)
			}
			ctx := t.Context()
			if _, err := d.Client.Capabilities(ctx); err != nil {
				t.Fatalf("capabilities over TLS: %v", err)
			}
			dir := t.TempDir()
			w, err := d.Client.Watch(ctx, dir, false)
			if err != nil {
				t.Fatalf("a WebSocket stream over TLS: %v", err)
			}
			if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Next(); err != nil {
				t.Fatalf("watch event over TLS: %v", err)
			}
			w.Close()
			_, anon, authed, _ := d.Server.ConnCounts()
			if anon != 0 || authed == 0 {
				t.Fatalf("TLS connections not tracked: %d anonymous, %d authenticated", anon, authed)
			}
		})
	}
}

// A client that does not trust the certificate, or pinned another one, is
// refused with a kind and a hint; a plain-HTTP client and TLS 1.1 get
// nothing; the daemon's own https origin passes the browser check.
func TestTLSRefusals(t *testing.T) {
	d, caFile, fp := tlsDaemon(t, func(ca, _ string) client.TLS { return client.TLS{CAFile: ca} })
	ctx := t.Context()
	other := api.CertFingerprint([]byte("another certificate"))
	for name, tc := range map[string]struct {
		trust client.TLS
		want  string
	}{
		"system roots":  {client.TLS{}, "not trusted"},
		"wrong pin":     {client.TLS{Fingerprint: other}, "not the pinned " + other},
		"ca, wrong pin": {client.TLS{CAFile: caFile, Fingerprint: other}, "is " + fp + ", not the pinned"},
	} {
		c, err := client.New(d.URL, d.Token, client.WithTLS(tc.trust))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Capabilities(ctx)
		e := api.AsError(err)
		if err == nil || e.Retryable || !strings.Contains(e.Message, tc.want) || e.Hint == "" {
			t.Errorf("%s: %+v, want a refusal with %q, not retryable, with a hint", name, e, tc.want)
		}
	}
	if _, err := client.New(strings.Replace(d.URL, "https", "http", 1), d.Token, client.WithTLS(client.TLS{CAFile: caFile})); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("TLS options on an http URL: %v", err)
	}
	plain, _ := client.New(strings.Replace(d.URL, "https", "http", 1), d.Token)
	if _, err := plain.Capabilities(ctx); err == nil {
		t.Error("a plain-HTTP call to the TLS port was answered")
	}
	for name, cfg := range map[string]*tls.Config{
		"TLS 1.1": {MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11},
		// A suite without AEAD, which Go's own defaults still take.
		"CBC suite": {MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}},
	} {
		cfg.InsecureSkipVerify = true
		old := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		if resp, err := old.Get(d.URL + "/health"); err == nil {
			resp.Body.Close()
			t.Errorf("a client of %s was served", name)
		}
	}

	// The browser check: the daemon's own https origin passes, http does not.
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(caFile)
	pool.AppendCertsFromPEM(b)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	host := strings.TrimPrefix(d.URL, "https://")
	for origin, want := range map[string]int{"https://" + host: 200, "http://" + host: 403} {
		req, _ := http.NewRequest(http.MethodGet, d.URL+"/v1/capabilities", nil)
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Origin", origin)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
	// WSS with the gorilla client, as the other languages' clients do it.
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}}
	ws, _, err := dialer.Dial("wss://"+host+"/ws", http.Header{server.HeaderAPIKey: {d.Token}})
	if err != nil {
		t.Fatalf("wss: %v", err)
	}
	ws.Close()
}

// The self-signed pair is made once in the state directory, private, and
// reused on restart; one that does not load is an error, never replaced.
func TestSelfSigned(t *testing.T) {
	if _, _, err := server.SelfSigned("", nil, nil); err == nil {
		t.Fatal("a self-signed pair without a state directory")
	}
	state := filepath.Join(t.TempDir(), "state")
	c, made, err := server.SelfSigned(state, []string{"10.1.2.3", "space.example"}, nil)
	if err != nil || !made {
		t.Fatalf("first start: %v, made %v", err, made)
	}
	fp := c.Fingerprint()
	dir := filepath.Join(state, server.SelfSignedDir)
	for file, mode := range map[string]os.FileMode{server.SelfSignedKey: 0o600, server.SelfSignedCert: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, file))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, mode %v, want %v", file, err, fi.Mode().Perm(), mode)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, server.SelfSignedCert))
	blk, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname("10.1.2.3"); err != nil {
		t.Errorf("the certificate does not name the listen address: %v", err)
	}
	if err := cert.VerifyHostname("localhost"); err != nil {
		t.Errorf("the certificate does not name localhost: %v", err)
	}
	if api.CertFingerprint(cert.Raw) != fp {
		t.Errorf("fingerprint %s is not the certificate's", fp)
	}
	again, made, err := server.SelfSigned(state, nil, nil)
	if err != nil || made || again.Fingerprint() != fp {
		t.Fatalf("restart: %v, made %v, fingerprint %s (was %s)", err, made, again.Fingerprint(), fp)
	}
	if err := os.WriteFile(filepath.Join(dir, server.SelfSignedKey), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := server.SelfSigned(state, nil, nil); err == nil || !strings.Contains(err.Error(), "does not load") {
		t.Fatalf("a broken pair: %v, want an error", err)
	}
	if b2, _ := os.ReadFile(filepath.Join(dir, server.SelfSignedCert)); string(b2) != string(b) {
		t.Fatal("the broken pair was replaced")
	}
	if entries, _ := os.ReadDir(state); len(entries) != 1 {
		t.Fatalf("left in the state directory: %v", entries)
	}
}

// A new self-signed pair is a leaf: not a CA by its basic constraints or
// its key usage, for server authentication only, and a certificate signed
// with its key does not verify with it as the root, while the certificate
// itself does (a client that trusts the file still reaches the daemon).
// The old CA-style pair is the control: what it signs verifies.
func TestSelfSignedIsALeaf(t *testing.T) {
	state := t.TempDir()
	if _, _, err := server.SelfSigned(state, []string{"10.1.2.3"}, nil); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(state, server.SelfSignedDir)
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, server.SelfSignedCert), filepath.Join(dir, server.SelfSignedKey))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if !cert.BasicConstraintsValid || cert.IsCA || server.IsCertAuthority(cert) {
		t.Errorf("basic constraints valid %v, CA %v: want CA:FALSE", cert.BasicConstraintsValid, cert.IsCA)
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("key usage %b, want digitalSignature alone (%b)", cert.KeyUsage, x509.KeyUsageDigitalSignature)
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("extended key usage %v, want serverAuth alone", cert.ExtKeyUsage)
	}
	if err := cert.VerifyHostname("10.1.2.3"); err != nil {
		t.Error(err)
	}

	verify := func(root, leaf *x509.Certificate, name string) error {
		roots := x509.NewCertPool()
		roots.AddCert(root)
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name})
		return err
	}
	if err := verify(cert, cert, "localhost"); err != nil {
		t.Errorf("the certificate as its own trust anchor: %v", err)
	}
	if err := verify(cert, tlstest.SignWith(t, pair, "github.com"), "github.com"); err == nil {
		t.Error("a github.com certificate signed with the pair's key verifies with the pair as root")
	}

	oldDir := filepath.Join(t.TempDir(), server.SelfSignedDir)
	old := tlstest.WriteCAPair(t, oldDir)
	oldPair, err := tls.LoadX509KeyPair(filepath.Join(oldDir, "cert.pem"), filepath.Join(oldDir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(old, tlstest.SignWith(t, oldPair, "github.com"), "github.com"); err != nil {
		t.Fatalf("control: the CA-style pair should sign for any name, got %v", err)
	}
}

// A CA-style pair an older daemon made keeps serving with its fingerprint
// (the pins of registered Spaces hold) and is warned about;
// RenewSelfSigned replaces it with a leaf, once: a leaf is kept.
func TestSelfSignedCAPairRenews(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, server.SelfSignedDir)
	old := tlstest.WriteCAPair(t, dir)
	var logs spacesdtest.Logs
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	c, made, err := server.SelfSigned(state, nil, log)
	if err != nil || made {
		t.Fatalf("an old pair: %v, made %v", err, made)
	}
	if c.Fingerprint() != api.CertFingerprint(old.Raw) {
		t.Fatalf("serving %s, want the old pair's %s", c.Fingerprint(), api.CertFingerprint(old.Raw))
	}
	if !strings.Contains(logs.String(), `"level":"WARN"`) || !strings.Contains(logs.String(), "is a CA") {
		t.Fatalf("no warning of the CA-style pair in the log:\n%s", logs.String())
	}

	renewed, err := server.RenewSelfSigned(state, []string{"10.1.2.3"})
	if err != nil || !renewed {
		t.Fatalf("renew: %v, renewed %v", err, renewed)
	}
	logs = spacesdtest.Logs{}
	c, made, err = server.SelfSigned(state, nil, log)
	if err != nil || made {
		t.Fatalf("after renewal: %v, made %v", err, made)
	}
	fp := c.Fingerprint()
	cert, err := server.ReadSelfSigned(state)
	if err != nil || fp == api.CertFingerprint(old.Raw) || server.IsCertAuthority(cert) || api.CertFingerprint(cert.Raw) != fp {
		t.Fatalf("after renewal: %v, serving %s (old %s)", err, fp, api.CertFingerprint(old.Raw))
	}
	if strings.Contains(logs.String(), "is a CA") {
		t.Fatalf("a leaf pair warned about as a CA:\n%s", logs.String())
	}
	if err := cert.VerifyHostname("10.1.2.3"); err != nil {
		t.Error(err)
	}

	if renewed, err := server.RenewSelfSigned(state, nil); err != nil || renewed {
		t.Fatalf("renewing a leaf pair: %v, renewed %v; want it kept", err, renewed)
	}
	if again, _ := server.ReadSelfSigned(state); api.CertFingerprint(again.Raw) != fp {
		t.Fatal("a leaf pair was replaced")
	}
	if entries, _ := os.ReadDir(state); len(entries) != 1 {
		t.Fatalf("left in the state directory: %v", entries)
	}
}

// Renewed certificate files are served from the next handshake after the
// check interval; files that do not load keep the old certificate.
func TestCertFilesReload(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	first := ca.Issue(t, "127.0.0.1")
	certFile, keyFile := tlstest.WritePair(t, dir, first)
	c, err := server.LoadCertFiles(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	serving := func() string {
		cert, err := c.Certificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return api.CertFingerprint(cert.Certificate[0])
	}
	if serving() != api.CertFingerprint(first.Certificate[0]) {
		t.Fatal("not serving the loaded certificate")
	}
	second := ca.Issue(t, "127.0.0.1")
	tlstest.WritePair(t, dir, second)
	server.ExpireCertCheck(c)
	if serving() != api.CertFingerprint(second.Certificate[0]) {
		t.Fatal("the renewed certificate is not served")
	}
	if err := os.WriteFile(certFile, []byte("half written"), 0o644); err != nil {
		t.Fatal(err)
	}
	server.ExpireCertCheck(c)
	if serving() != api.CertFingerprint(second.Certificate[0]) {
		t.Fatal("a broken renewal replaced the certificate in use")
	}
	if _, err := server.LoadCertFiles(filepath.Join(dir, "none"), keyFile, nil); err == nil {
		t.Fatal("a missing certificate file loaded")
	}
}
