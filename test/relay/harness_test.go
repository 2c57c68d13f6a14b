package relay_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
	"github.com/trycua/cua-spacesd/bridge/mcp"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/tools"
	"github.com/trycua/cua-spacesd/internal/faultproxy"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/mcp/mcptest"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// waitTimeout bounds a wait for a state (attached again, a relay up): a
// liveness bound for a loaded 2-core CI machine, not a performance figure.
// It is above the attacher's longest backoff (30 s).
const waitTimeout = 90 * time.Second

// world is one relay with its users, a fault proxy in front of it, and a
// test CA that signs its certificate.
type world struct {
	t       testing.TB
	ca      *tlstest.CA
	caFile  string
	dataDir string
	// addr is the relay's own listener; link is the fault proxy Spaces
	// dial it through (wss://link), so a test can cut their sessions.
	addr  string
	link  *faultproxy.Proxy
	relay *relayd.Relay
	cert  tls.Certificate
	logs  *testenv.SyncBuffer
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{t: t, ca: tlstest.NewCA(t), dataDir: t.TempDir(), logs: &testenv.SyncBuffer{}}
	w.caFile = w.ca.WriteCA(t, t.TempDir())
	w.cert = w.ca.Issue(t, "127.0.0.1", "localhost")
	// The proxy needs the relay's address and the relay the proxy's (it
	// hands it to Spaces): reserve the relay's port first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.addr = ln.Addr().String()
	ln.Close()
	link, err := faultproxy.Start(w.addr)
	if err != nil {
		t.Fatal(err)
	}
	w.link = link
	w.startRelay()
	t.Cleanup(func() {
		if w.relay != nil {
			_ = w.relay.Close()
		}
		link.Close()
	})
	return w
}

// startRelay starts the relay node on its data dir and address (again,
// after restartRelay).
func (w *world) startRelay() {
	w.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the old listener's port may take a moment to free
		if ln, err = net.Listen("tcp", w.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		w.t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// TURN on loopback, each transport on a port of its own (the
	// credentials name them), TLS with the relay's certificate.
	turn := &turnsvc.Options{UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0"}
	r, err := relayd.Start(context.Background(), ln, relayd.Options{DataDir: w.dataDir, Node: "relay-1",
		URLs: []string{"wss://" + w.link.Addr}, TLS: relayd.TLSConfig(w.cert), Logger: log, Version: "test", TURN: turn})
	if err != nil {
		w.t.Fatal(err)
	}
	w.relay = r
}

// restartRelay stops the node as SIGTERM would and starts it again on the
// same data dir and address.
func (w *world) restartRelay() {
	w.t.Helper()
	if err := w.relay.Close(); err != nil {
		w.t.Fatalf("relay close: %v", err)
	}
	w.relay = nil
	w.startRelay()
}

// user adds a user and answers its API token.
func (w *world) user(name string) string {
	w.t.Helper()
	ctx := context.Background()
	if _, err := w.relay.Store.CreateUser(ctx, name, ""); err != nil {
		w.t.Fatal(err)
	}
	_, tok, err := w.relay.Store.CreateUserToken(ctx, name)
	if err != nil {
		w.t.Fatal(err)
	}
	return tok
}

// relayURL is the relay's own HTTPS URL, as bridges log in to it.
func (w *world) relayURL() string { return "https://" + w.addr }

// space is a real cua-spacesd with a state dir of its own, its HTTP port on
// loopback only; display is its X display ("" = none).
type space struct {
	d        *spacesdtest.Daemon
	stateDir string
	opts     spacesdtest.Options
}

func startSpace(t testing.TB, display string) *space {
	t.Helper()
	state := t.TempDir()
	o := spacesdtest.Options{Display: display,
		Files: filesvc.Options{StateDir: state},
		Relay: relaysvc.Options{StateDir: state}}
	return &space{d: spacesdtest.Start(t, o), stateDir: state, opts: o}
}

// restart stops the daemon and starts it again on the same state dir,
// address and token, as a rebooted Space.
func (s *space) restart(t testing.TB) {
	t.Helper()
	s.d.Stop()
	s.opts.Addr = strings.TrimPrefix(strings.TrimPrefix(s.d.URL, "http://"), "https://")
	s.opts.Token = s.d.Token
	s.d = spacesdtest.Start(t, s.opts)
}

// waitConnected waits until the Space's relay session is up, one that
// started after since (Unix ms; 0: any).
func (s *space) waitConnected(t testing.TB, since int64) api.RelayStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var st api.RelayStatus
	var err error
	for ctx.Err() == nil {
		st, err = s.d.RelayStatus(ctx)
		if err == nil && st.Connected && st.ConnectedSinceMS > since {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the Space did not attach (again) within %v: %+v, %v", waitTimeout, st, err)
	return st
}

// bridge is a cua-bridge home logged in to the relay as one user, with its
// MCP server in process (the one `cua-bridge mcp` serves over stdio) and
// its CLI.
type bridge struct {
	home string
	reg  *registry.Registry
	mcp  *sdk.ClientSession
}

func newBridge(t testing.TB, w *world, userToken string) *bridge {
	t.Helper()
	return newBridgeAt(t, w.relayURL(), w.caFile, userToken)
}

// newBridgeAt is a bridge logged in to the relay at relayURL, whose
// certificate the CA in caFile signs.
func newBridgeAt(t testing.TB, relayURL, caFile, userToken string) *bridge {
	t.Helper()
	home := t.TempDir()
	reg, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	if _, err := reg.LoginRelay(context.Background(), registry.RelayLogin{URL: relayURL, CAFile: caFile, Token: userToken}); err != nil {
		t.Fatalf("relay login: %v", err)
	}
	host, err := hostfs.Confined([]string{os.TempDir()}, hostfs.Deny{Path: home, What: "$CUA_HOME"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	b, err := mcp.New(mcp.Config{Deps: tools.NewDeps(reg, log, tools.WithHost(host)), Logger: log, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	fromBridge, toClient := io.Pipe()
	fromClient, toBridge := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.RunStdio(ctx, fromClient, toClient)
		toClient.Close()
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: fromBridge, Writer: toBridge}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect over stdio: %v", err)
	}
	t.Cleanup(func() { cs.Close(); toBridge.Close(); cancel(); <-done; b.Close() })
	return &bridge{home: home, reg: reg, mcp: cs}
}

// call calls a tool and decodes its structured answer into out; a tool
// error fails the test with its text.
func (b *bridge) call(t testing.TB, name string, args map[string]any, out any) {
	t.Helper()
	res := b.callRaw(t, name, args)
	if res.IsError {
		t.Fatalf("%s %v: %s", name, args, mcptest.Text(res))
	}
	if out != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, raw, err)
		}
	}
}

func (b *bridge) callRaw(t testing.TB, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := b.mcp.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// cli runs one cua-bridge command on this home, in process.
func (b *bridge) cli(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Run(t.Context(), cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Home: b.home}, args[0], args[1:])
	return out.String(), errb.String(), code
}

// addSpace registers a direct Space in the home under name.
func (b *bridge) addSpace(t testing.TB, name string, s *space) {
	t.Helper()
	if _, err := b.reg.Add(context.Background(), name, s.d.URL, s.d.Token); err != nil {
		t.Fatal(err)
	}
}

// registered is relay_register_space's answer.
type registered struct {
	Space      string `json:"space"`
	RelaySpace string `json:"relay_space"`
	Machine    string `json:"machine"`
	URL        string `json:"url"`
	Online     bool   `json:"online"`
}

// register publishes the Space on the relay through the tool.
func (b *bridge) register(t testing.TB, name string) registered {
	t.Helper()
	var r registered
	b.call(t, "relay_register_space", map[string]any{"space": name}, &r)
	return r
}

// registryEntry is a Space served over TLS that the test CA signs.
func registryEntry(name, url, token, caFile string) registry.Entry {
	return registry.Entry{Name: name, URL: url, Token: token, CAFile: caFile}
}
