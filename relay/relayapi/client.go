package relayapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// Limits of the client.
const (
	// maxAnswerBytes bounds the read of one answer of the user API: a list
	// of computers is small, and a server that is not a relay must not
	// make the bridge read without end.
	maxAnswerBytes = 4 << 20
	// dialTimeout bounds opening a connection to the relay.
	dialTimeout = 10 * time.Second
)

// Trust says how a client trusts the relay's certificate: the system's
// roots (the zero Trust), the CAs of a PEM file, or the certificate's pinned
// fingerprint ("sha256:<hex>", as cua-relay --tls-self-signed prints it).
// With both, the chain must verify against the CA file and the certificate
// match the pin. It mirrors api/client.TLS: this package stands on api
// alone (internal/layering), so that the relay itself may import it.
type Trust struct {
	CAFile      string
	Fingerprint string
}

// IsZero reports whether t says nothing beyond the system's roots.
func (t Trust) IsZero() bool { return t == Trust{} }

// CAPEM reads the CA file, for a Space told to trust the relay as this
// client does (api.RelayAttachRequest.CAPEM); "" without a CA file.
func (t Trust) CAPEM() (string, error) {
	if t.CAFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(t.CAFile)
	if err != nil {
		return "", api.Errorf(api.KindInvalidArgument, "relay CA file %s: %w", t.CAFile, err)
	}
	return string(b), nil
}

// Config is the client side of t.
func (t Trust) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := t.CAPEM()
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(pem)) {
			return nil, api.Errorf(api.KindInvalidArgument, "relay CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.Fingerprint != "" {
		want, err := api.ParseFingerprint(t.Fingerprint)
		if err != nil {
			return nil, err
		}
		// The pin is the trust: a self-signed relay has no chain to verify.
		// With a CA file as well, the chain is verified too.
		cfg.InsecureSkipVerify = t.CAFile == ""
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the relay sent no certificate")
			}
			if got := sha256.Sum256(cs.PeerCertificates[0].Raw); got != want {
				return &PinMismatchError{Got: api.CertFingerprint(cs.PeerCertificates[0].Raw), Want: api.FingerprintPrefix + hex.EncodeToString(want[:])}
			}
			return nil
		}
	}
	return cfg, nil
}

// PinMismatchError is the failure of a connection whose certificate is not
// the pinned one.
type PinMismatchError struct{ Got, Want string }

func (e *PinMismatchError) Error() string {
	return fmt.Sprintf("the relay's certificate is %s, not the pinned %s", e.Got, e.Want)
}

// Client calls a relay's user API with a user's token (cuau_...). It is
// safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	trust Trust
	http  *http.Client
}

// New returns a client of the relay at rawURL ("https://relay.example"),
// calling with token and trusting the relay's certificate as trust says.
// http:// is taken only for a loopback host: the token must not cross a
// network in clear.
func New(rawURL, token string, trust Trust) (*Client, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if !trust.IsZero() && u.Scheme != "https" {
		return nil, api.Errorf(api.KindInvalidArgument, "relay url %s: a CA file or a pinned fingerprint needs an https:// URL", rawURL)
	}
	cfg, err := trust.Config()
	if err != nil {
		return nil, err
	}
	t := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     cfg,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &Client{base: u, token: token, trust: trust, http: &http.Client{Transport: t}}, nil
}

// ParseURL checks a relay's URL and answers it canonical: https (or http
// on a loopback host), a host, no query, no trailing slash.
func ParseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, api.Errorf(api.KindInvalidArgument, "relay url %q: want https://HOST[:PORT]", raw)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return nil, api.Errorf(api.KindInvalidArgument, "relay url %q: http:// only on a loopback host; the relay's token must not cross a network in clear", raw).
			WithHint("use the relay's https:// URL")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u, nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// URL is the relay's base URL.
func (c *Client) URL() string { return c.base.String() }

// Trust is how the client trusts the relay.
func (c *Client) Trust() Trust { return c.trust }

// ComputerURL is the base URL of a computer's cua-spacesd through the
// relay: https://RELAY/c/<computer>. A daemon client with this base URL
// and the user's token reaches every route of that daemon.
func (c *Client) ComputerURL(computer string) string {
	return ComputerURL(c.base.String(), computer)
}

// ComputerURL is ComputerURL of the relay at base.
func ComputerURL(base, computer string) string {
	return strings.TrimRight(base, "/") + PrefixComputer + url.PathEscape(computer)
}

// AttachURLs are the relay's wss:// attach URLs derived from its base URL,
// for a relay that did not name them.
func (c *Client) AttachURLs() []string {
	u := *c.base
	u.Scheme = "wss"
	if c.base.Scheme == "http" {
		u.Scheme = "ws"
	}
	u.Path = c.base.Path + PathAttach
	return []string{u.String()}
}

// CloseIdleConnections closes the client's idle connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Health is the relay's identity (GET /health): its node and grant key.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.call(ctx, http.MethodGet, PathHealth, nil, &h); err != nil {
		return nil, err
	}
	if h.Relay != RelayName {
		return nil, api.Errorf(api.KindRelay, "%s answered but is no %s", c.base.Host, RelayName)
	}
	return &h, nil
}

// Me answers who the token belongs to.
func (c *Client) Me(ctx context.Context) (*Me, error) {
	var me Me
	return &me, c.call(ctx, http.MethodGet, PathMe, nil, &me)
}

// Computers lists the user's computers.
func (c *Client) Computers(ctx context.Context) ([]Computer, error) {
	var l ComputerList
	if err := c.call(ctx, http.MethodGet, PathComputers, nil, &l); err != nil {
		return nil, err
	}
	return l.Computers, nil
}

// CreateComputer registers a computer under name, or gives the user's
// computer of that name a new token; the token is in the answer only.
func (c *Client) CreateComputer(ctx context.Context, name string) (*ComputerToken, error) {
	var ct ComputerToken
	return &ct, c.call(ctx, http.MethodPost, PathComputers, CreateComputer{Name: name}, &ct)
}

// Computer answers one of the user's computers (not_found for a name the
// user does not hold).
func (c *Client) Computer(ctx context.Context, name string) (*Computer, error) {
	var comp Computer
	return &comp, c.call(ctx, http.MethodGet, computerPath(name), nil, &comp)
}

// DeleteComputer removes one of the user's computers; false when there was
// none of that name.
func (c *Client) DeleteComputer(ctx context.Context, name string) (bool, error) {
	var d Deleted
	if err := c.call(ctx, http.MethodDelete, computerPath(name), nil, &d); err != nil {
		return false, err
	}
	return d.Deleted, nil
}

func computerPath(name string) string {
	return strings.Replace(PathComputer, "{name}", url.PathEscape(name), 1)
}

// call does one JSON exchange with the relay.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return api.Errorf(api.KindJSON, "encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := *c.base
	// A path may carry its query (the shares' who and audit).
	p, q, _ := strings.Cut(path, "?")
	u.Path, u.RawQuery = c.base.Path+p, q
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return api.Errorf(api.KindInvalidArgument, "%s %s: %w", method, path, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return transportError(ctx, c.base.Host, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return transportError(ctx, c.base.Host, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp.StatusCode, method, path, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return api.Errorf(api.KindRelay, "decode the relay's answer of %s %s: %w", method, path, err).
			WithRetryable(false).WithHint("check that the URL is a cua-relay's")
	}
	return nil
}

// decodeError turns a relay's non-2xx answer into an *api.Error: its own
// envelope, or kind relay when something other than a relay answered.
func decodeError(status int, method, path string, b []byte) error {
	var env api.ErrorEnvelope
	if json.Unmarshal(b, &env) == nil && env.Error != nil && env.Error.Kind != "" {
		env.Error.Status = status
		return env.Error
	}
	e := api.Errorf(api.KindRelay, "%s %s answered HTTP %d without a relay error body: no cua-relay there?", method, path, status).
		WithHint("check the relay's URL")
	e.Status = status
	// A gateway in front of a relay that is restarting answers 502-504:
	// worth a retry; anything else will answer the same again.
	return e.WithRetryable(status >= 502 && status <= 504)
}

func transportError(ctx context.Context, host string, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return api.Errorf(api.KindCancelled, "relay call cancelled").WithCause(err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return api.Errorf(api.KindTimeout, "relay %s did not answer in time", host).WithCause(err)
	}
	var pin *PinMismatchError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &pin):
		return api.Errorf(api.KindRelay, "TLS: %s", pin.Error()).WithRetryable(false).WithCause(err).
			WithHint("if the relay made a new key pair, log in again with the fingerprint cua-relay printed; otherwise someone is in between")
	case errors.As(err, &verify):
		return api.Errorf(api.KindRelay, "TLS: the relay's certificate is not trusted: %s", verify.Err.Error()).WithRetryable(false).WithCause(err).
			WithHint("pin the relay's certificate (--fingerprint sha256:...) or give the CA that signed it (--ca)")
	}
	return api.Errorf(api.KindRelay, "cannot reach the relay %s: %v", host, err).WithCause(err)
}

// Shares answers who one of the user's computers is shared with; audit
// adds its newest audit lines. Owner only: another user's computer is
// not_found.
func (c *Client) Shares(ctx context.Context, computer string, audit bool) (*Shares, error) {
	p := sharesPath(computer)
	if audit {
		p += "?" + QueryAudit + "=1"
	}
	var s Shares
	return &s, c.call(ctx, http.MethodGet, p, nil, &s)
}

// Share shares one of the user's computers (or gives a share a new role).
func (c *Client) Share(ctx context.Context, computer string, req ShareRequest) (*Shares, error) {
	var s Shares
	return &s, c.call(ctx, http.MethodPut, sharesPath(computer), req, &s)
}

// Unshare ends the share of who on one of the user's computers; who ""
// ends every share.
func (c *Client) Unshare(ctx context.Context, computer, who string) (*Shares, error) {
	p := sharesPath(computer)
	if who != "" {
		p += "?" + QueryWho + "=" + url.QueryEscape(who)
	}
	var s Shares
	return &s, c.call(ctx, http.MethodDelete, p, nil, &s)
}

func sharesPath(name string) string {
	return strings.Replace(PathComputerShares, "{name}", url.PathEscape(name), 1)
}
