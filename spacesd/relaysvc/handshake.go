package relaysvc

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// errGrantKeyChanged: the relay offered a grant key other than the pinned
// one. The Space then refuses every session until a new PUT /v1/relay.
var errGrantKeyChanged = closeErr(protocol.CloseGrantKeyChanged, "the relay offered a grant key other than the one this Space pinned; attach again (PUT /v1/relay) to trust a new one")

// closeErr is code's error, its reason the code's word, so that
// protocol.CloseCodeFor answers code again.
func closeErr(code protocol.CloseCode, msg string) error {
	return code.Err(msg).WithReason(code.String())
}

// readWelcome reads the relay's answer to hello on the control stream and
// checks it: a Welcome of a version hello accepts, naming the computer
// hello named (if it named one), with the pinned key (if one is pinned).
// A Close instead is the relay's refusal, with its code.
func readWelcome(r *protocol.Reader, hello protocol.Hello, pinned ed25519.PublicKey) (protocol.Welcome, error) {
	m, err := r.ReadMessage()
	if err != nil {
		return protocol.Welcome{}, fmt.Errorf("relay handshake: %w", err)
	}
	switch m := m.(type) {
	case protocol.Welcome:
		if !hello.Accepts(m.Version) {
			return protocol.Welcome{}, closeErr(protocol.CloseUnsupportedVersion, fmt.Sprintf("the relay chose version %d, this Space speaks %d to %d", m.Version, hello.MinVersion, hello.MaxVersion))
		}
		if hello.Computer != "" && m.Computer != hello.Computer {
			return protocol.Welcome{}, closeErr(protocol.CloseProtocolError, fmt.Sprintf("the relay's token names computer %q, this Space is %q: attach again (PUT /v1/relay) to take the new name", m.Computer, hello.Computer))
		}
		if pinned != nil && !pinned.Equal(m.GrantKey) {
			return protocol.Welcome{}, errGrantKeyChanged
		}
		return m, nil
	case protocol.Close:
		return protocol.Welcome{}, m.Code.Err(m.Message)
	default:
		return protocol.Welcome{}, closeErr(protocol.CloseProtocolError, fmt.Sprintf("the relay answered hello with %s, not welcome", m.FrameType()))
	}
}

// dialRefusedError is the relay's answer to an upgrade it refused: 401
// for a bad token (its reason the close code's word), 503 with
// Retry-After when busy or restarting.
type dialRefusedError struct {
	Status     int
	Reason     string
	Message    string
	RetryAfter time.Duration
}

func (e *dialRefusedError) Error() string {
	s := fmt.Sprintf("the relay refused the attach: HTTP %d", e.Status)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// tokenRefused reports whether the relay refused the computer token.
func (e *dialRefusedError) tokenRefused() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
}

// refusedFrom reads a refused upgrade's answer (its body bounded).
func refusedFrom(resp *http.Response) *dialRefusedError {
	e := &dialRefusedError{Status: resp.StatusCode}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = min(time.Duration(s)*time.Second, protocol.MaxRetryAfter)
	}
	if resp.Body != nil {
		var env api.ErrorEnvelope
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if json.Unmarshal(b, &env) == nil && env.Error != nil {
			e.Reason, e.Message = env.Error.Reason, env.Error.Message
		}
	}
	return e
}

// checkRelayURL accepts a relay URL: wss://host[:port][/path], no query.
func checkRelayURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "wss" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "relay URL %q: want wss://HOST[:PORT]", s)
	}
	return u, nil
}

// attachURL is the control session's URL: the relay URL's path, or
// relayapi.PathAttach when it has none.
func attachURL(s string) (string, error) {
	u, err := checkRelayURL(s)
	if err != nil {
		return "", err
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = relayapi.PathAttach
	}
	return u.String(), nil
}

// dataURL is an OpenData's URL: its path on the relay node of the session.
func dataURL(relay, path string) (string, error) {
	u, err := checkRelayURL(relay)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(path, "/") {
		return "", api.Errorf(api.KindInvalidArgument, "open_data path %q is not absolute", path)
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String(), nil
}

// tlsConfig says how the relay's certificate is trusted: the pinned
// fingerprint, the PEM CAs, both, or (neither) the system's roots.
func tlsConfig(a attachment) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.CAPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(a.CAPEM)) {
			return nil, api.Errorf(api.KindInvalidArgument, "the relay CA holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if a.Fingerprint != "" {
		want, err := api.ParseFingerprint(a.Fingerprint)
		if err != nil {
			return nil, err
		}
		// The pin is the trust, as for the bridge's pinned Spaces: a
		// self-signed relay has no chain to verify. With CAs as well the
		// chain is verified too.
		cfg.InsecureSkipVerify = a.CAPEM == ""
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the relay sent no certificate")
			}
			if sha256.Sum256(cs.PeerCertificates[0].Raw) != want {
				return api.Errorf(api.KindEnv, "TLS: the relay's certificate is %s, not the pinned %s",
					api.CertFingerprint(cs.PeerCertificates[0].Raw), a.Fingerprint)
			}
			return nil
		}
	}
	return cfg, nil
}
