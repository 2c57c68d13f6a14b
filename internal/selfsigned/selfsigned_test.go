package selfsigned_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/internal/selfsigned"
)

// A pair is a leaf for localhost, loopback and the hosts given (an
// unspecified address is left out), valid from an hour ago, never a CA.
func TestPair(t *testing.T) {
	now := time.Now()
	certPEM, keyPEM, err := selfsigned.Pair("cua-test", []string{"10.1.2.3", "box.example", "0.0.0.0", ""}, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if c.IsCA || c.KeyUsage&x509.KeyUsageCertSign != 0 {
		t.Fatalf("a CA: IsCA %v, key usage %v", c.IsCA, c.KeyUsage)
	}
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "10.1.2.3", "box.example"} {
		if err := c.VerifyHostname(h); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	if err := c.VerifyHostname("0.0.0.0"); err == nil {
		t.Error("the unspecified address is named")
	}
	if !c.NotBefore.Before(now) || c.NotAfter.Before(now.Add(selfsigned.Validity-time.Minute)) {
		t.Errorf("validity %s to %s", c.NotBefore, c.NotAfter)
	}
}

// Programs that start at once on one state directory end with one pair,
// and both can load it; no temporary directory is left behind.
func TestMakeRace(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- selfsigned.Make(dir, "cua-test", nil) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, selfsigned.Dir)
	if _, err := tls.LoadX509KeyPair(filepath.Join(p, selfsigned.CertFile), filepath.Join(p, selfsigned.KeyFile)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("left in the state directory: %v", entries)
	}
	if st, _ := os.Stat(filepath.Join(p, selfsigned.KeyFile)); st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v", st.Mode().Perm())
	}
}
