// Package client is the Go client of cua-spacesd: every route of the wire
// contract (package api) as a method, over HTTP and WebSocket. How it reaches
// the daemon is one option (WithDialer), so a relay is only another dialer.
package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/trycua/cua-spacesd/api"
)

// Client calls one cua-spacesd. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	token     string
	http      *http.Client
	ws        *websocket.Dialer
	keepAlive keepAlive
}

// Dialer opens the connection under every call and stream of a Client. The
// address is the one of the Space's URL; a dialer that reaches the Space
// another way (through a relay, in a test's network namespace) may ignore it.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Option configures a Client.
type Option func(*options)

type options struct {
	dial      Dialer
	keepAlive keepAlive
	tls       TLS
}

// keepAlive is the timing of a client's streams.
type keepAlive struct{ ping, idle time.Duration }

// WithStreamKeepAlive replaces the contract's stream keep-alive
// (api.StreamPingInterval, api.StreamIdleTimeout): a link that drops idle
// connections sooner (a relay, a proxy) needs pings more often.
func WithStreamKeepAlive(ping, idle time.Duration) Option {
	return func(o *options) { o.keepAlive = keepAlive{ping, idle} }
}

// WithDialer makes every HTTP call and WebSocket stream of the client go
// through dial: the one place that says how the client reaches its daemon.
func WithDialer(dial Dialer) Option { return func(o *options) { o.dial = dial } }

// dialTimeout bounds opening a connection with the default dialer.
const dialTimeout = 10 * time.Second

// New returns a client of the daemon at baseURL ("http://host:3211").
// A bare "host:port" is taken as http.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return nil, api.Errorf(api.KindInvalidArgument, "spacesd url %q is not an http(s) URL", baseURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, api.Errorf(api.KindInvalidArgument, "spacesd url %q: scheme must be http or https", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{
		base:  u,
		token: token,
		// No overall timeout: long calls (exec with a long timeout, big
		// transfers) are bounded by their context instead.
		http: &http.Client{Transport: defaultTransport},
		ws:   &websocket.Dialer{HandshakeTimeout: 10 * time.Second, Proxy: http.ProxyFromEnvironment},
		keepAlive: keepAlive{
			ping: cmp.Or(o.keepAlive.ping, api.StreamPingInterval),
			idle: cmp.Or(o.keepAlive.idle, api.StreamIdleTimeout),
		},
	}
	if !o.tls.IsZero() && u.Scheme != "https" {
		return nil, api.Errorf(api.KindInvalidArgument, "spacesd url %q: a CA file or a pinned fingerprint needs an https:// URL", baseURL)
	}
	if o.dial != nil || !o.tls.IsZero() {
		// A transport of its own: the shared one knows neither the
		// dialer nor the trust.
		t := newTransport()
		if o.dial != nil {
			t.Proxy = nil // the dialer decides the route
			t.DialContext = o.dial
			c.ws.Proxy = nil
			c.ws.NetDialContext = o.dial
		}
		if !o.tls.IsZero() {
			cfg, err := o.tls.config()
			if err != nil {
				return nil, err
			}
			t.TLSClientConfig = cfg
			c.ws.TLSClientConfig = cfg.Clone()
		}
		c.http = &http.Client{Transport: t}
	}
	return c, nil
}

// defaultTransport keeps connections to a Space warm: most calls are small
// and back to back, and a fresh TCP handshake per call would dominate them.
// Clients with the default dialer share it, so they share its pool.
var defaultTransport = newTransport()

func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
}

// BaseURL is the daemon's base URL.
func (c *Client) BaseURL() string { return c.base.String() }

func (c *Client) url(path string, q url.Values) string {
	u := *c.base
	u.Path = c.base.Path + path
	if q != nil {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Health asks GET /health. It tells "no spacesd here" (kind
// spacesd_not_available) from "spacesd, but the token is wrong", which only
// an authenticated call reveals.
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(api.PathHealth, nil), nil)
	if err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "health request: %w", err)
	}
	// The bearer goes too: a Space reached through a relay
	// (https://RELAY/c/<computer>) is behind the relay's auth, /health
	// included; a daemon's own /health ignores it.
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	var h api.Health
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		// A relay in between answers with the envelope: the computer is
		// offline (relay), not the user's (not_found), the token wrong.
		var env api.ErrorEnvelope
		if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Kind != "" {
			env.Error.Status = resp.StatusCode
			return nil, env.Error
		}
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Daemon != api.DaemonName {
		return nil, api.Errorf(api.KindSpacesdNotAvailable,
			"%s answered but runs no cua-spacesd (GET /health: HTTP %d)", c.base.Host, resp.StatusCode).
			WithRetryable(false)
	}
	return &h, nil
}

// Capabilities asks what this Space supports.
func (c *Client) Capabilities(ctx context.Context) (*api.Capabilities, error) {
	var caps api.Capabilities
	return &caps, c.JSON(ctx, http.MethodGet, api.PathCapabilities, nil, nil, &caps)
}

// JSON does one call with a JSON body (nil for none) and decodes a JSON answer
// into out (nil to discard it).
func (c *Client) JSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return api.Errorf(api.KindInvalidArgument, "encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.Do(ctx, method, path, q, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return api.Errorf(api.KindJSON, "decode answer of %s %s: %w", method, path, err)
	}
	// The decoder stops at the value's end: what follows (an encoder's
	// newline, a chunked body's last chunk) is read here, else the
	// connection closes with the body instead of going back to the pool,
	// and the next call pays a new handshake (a TLS one to a Space or a
	// relay).
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return nil
}

// Do sends one authenticated request and returns the response of a 2xx
// answer; any other answer becomes an *Error. The caller closes the body.
func (c *Client) Do(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, q), body)
	if err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "%s %s: %w", method, path, err)
	}
	return c.DoRequest(req, contentType)
}

// DoRequest sends a prepared request with the bearer token. A mutating
// request (any method but GET and HEAD) carries an Idempotency-Key: the
// context's (WithIdempotencyKey), or a new one. When the link fails before
// an answer came, it is sent again with the same key, so a call that ran
// is answered and not run twice (the daemon keeps keys 10 minutes); a
// request whose body cannot be read again is not.
func (c *Client) DoRequest(req *http.Request, contentType string) (*http.Response, error) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	// A route that takes a body declares its type even when the body is
	// empty (an upload's commit): the daemon refuses requests without it.
	if contentType != "" && (req.Body != nil || req.Method == http.MethodPost || req.Method == http.MethodPut) {
		req.Header.Set("Content-Type", contentType)
	}
	mutating := req.Method != http.MethodGet && req.Method != http.MethodHead
	if mutating && req.Header.Get(api.HeaderIdempotencyKey) == "" {
		req.Header.Set(api.HeaderIdempotencyKey, idempotencyKey(req))
	}
	getBody := replayableBody(req)
	resp, err := c.http.Do(req)
	for attempt := 0; err != nil && mutating && getBody != nil && attempt < len(retryPauses) && retryable(req.Context(), err); attempt++ {
		if !sleepCtx(req.Context(), retryPauses[attempt]) {
			break
		}
		body, gerr := getBody()
		if gerr != nil {
			break
		}
		again := req.Clone(req.Context())
		again.Body = body
		resp, err = c.http.Do(again)
	}
	if err != nil {
		return nil, transportError(req.Context(), err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeError(resp)
}

// decodeError turns a non-2xx answer into an *Error. An answer without our
// envelope means something other than spacesd answered.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var env api.ErrorEnvelope
	if json.Unmarshal(b, &env) == nil && env.Error != nil && env.Error.Kind != "" {
		env.Error.Status = resp.StatusCode
		return env.Error
	}
	return &api.Error{
		Kind:      api.KindSpacesdNotAvailable,
		Message:   fmt.Sprintf("%s %s answered HTTP %d without a spacesd error body: no cua-spacesd there?", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode),
		Retryable: false,
		Hint:      api.DefaultHint(api.KindSpacesdNotAvailable),
		Status:    resp.StatusCode,
	}
}

func transportError(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return (&api.Error{Kind: api.KindCancelled, Message: "call cancelled"}).WithCause(err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return (&api.Error{Kind: api.KindTimeout, Message: "call timed out", Retryable: true, Hint: api.DefaultHint(api.KindTimeout)}).WithCause(err)
	}
	if e := tlsError(err); e != nil {
		return e
	}
	return (&api.Error{Kind: api.KindEnv, Message: fmt.Sprintf("cannot reach spacesd: %v", err), Retryable: true,
		Hint: "check that the Space is running and its URL is right"}).WithCause(err)
}

// DialWebSocket opens an authenticated WebSocket to path.
func (c *Client) DialWebSocket(ctx context.Context, path string, q url.Values) (*websocket.Conn, error) {
	u := c.url(path, q)
	u = "ws" + strings.TrimPrefix(u, "http")
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	conn, resp, err := c.ws.DialContext(ctx, u, h)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusSwitchingProtocols {
				resp.Request = &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}}
				return nil, decodeError(resp)
			}
		}
		return nil, transportError(ctx, err)
	}
	return conn, nil
}

func decodeJSON(r io.Reader, out any) error {
	if err := json.NewDecoder(r).Decode(out); err != nil {
		return api.Errorf(api.KindJSON, "decode spacesd answer: %w", err)
	}
	return nil
}
