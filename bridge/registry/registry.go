// Package registry keeps the Spaces a bridge knows under $CUA_HOME: names and
// URLs in spaces.json, tokens in tokens.json (mode 0600). Several bridges
// (an MCP server and a CLI, say) may change it at once: every change takes an
// exclusive flock on registry.lock, rereads both files, and replaces them by
// writing a temp file, fsyncing it and renaming it over the old one.
//
// It is also where the bridge gets the client of a Space (Client,
// ClientFor): one per Space, built by one factory and kept while the entry
// stays the same (clients.go).
package registry

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// File names under the home directory.
const (
	SpacesFile = "spaces.json"
	TokensFile = "tokens.json"
	LockFile   = "registry.lock"

	// tokensMode keeps tokens readable by their owner only.
	tokensMode fs.FileMode = 0o600
	homeMode   fs.FileMode = 0o700
	spacesMode fs.FileMode = 0o644

	// maxNameLen bounds a Space name: it appears in tool output and logs.
	maxNameLen = 64
)

// Prefixes of Space ids that are not plain names.
const (
	PrefixDirect = "direct:"
	PrefixRelay  = "relay:"
)

// EnvHome names the registry's directory; default ~/.cua.
const EnvHome = "CUA_HOME"

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Entry is one registered Space.
type Entry struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Token string `json:"-"`
	// Fingerprint pins the certificate of an https Space ("sha256:...",
	// as cua-spacesd --tls-self-signed prints it); CAFile is a PEM file of
	// the CAs that sign it. Neither: the system's roots.
	Fingerprint string `json:"fingerprint,omitempty"`
	CAFile      string `json:"ca_file,omitempty"`
	// Relay is the computer's name when the entry is relay:<computer>,
	// reached through the logged-in relay (never in spaces.json).
	Relay string `json:"-"`
}

// TLS is how a client of the Space trusts its certificate.
func (e Entry) TLS() client.TLS { return client.TLS{CAFile: e.CAFile, Fingerprint: e.Fingerprint} }

// CheckTLS checks an entry's trust settings against its (normalized) URL
// and returns them canonical: the fingerprint as cua-spacesd prints it,
// the CA file as an absolute path that holds certificates.
func CheckTLS(e Entry) (Entry, error) {
	if e.Fingerprint == "" && e.CAFile == "" {
		return e, nil
	}
	if !strings.HasPrefix(e.URL, "https://") {
		return e, api.Errorf(api.KindInvalidArgument, "url %s: a pinned fingerprint or a CA file needs an https:// URL", e.URL).
			WithHint("serve the Space with --tls-self-signed (or --tls-cert) and add it as https://HOST:PORT")
	}
	if e.Fingerprint != "" {
		sum, err := api.ParseFingerprint(e.Fingerprint)
		if err != nil {
			return e, err
		}
		e.Fingerprint = api.FingerprintPrefix + hex.EncodeToString(sum[:])
	}
	if e.CAFile != "" {
		abs, err := filepath.Abs(e.CAFile)
		if err != nil {
			return e, api.Errorf(api.KindInvalidArgument, "CA file %s: %w", e.CAFile, err)
		}
		e.CAFile = abs
	}
	// A client built only to check the CA file as a client will read it,
	// never used to connect: apart from the registry's factory and cache,
	// which take entries that are checked already.
	if _, err := client.New(e.URL, "", client.WithTLS(e.TLS())); err != nil {
		return e, err // an unreadable CA file, or one without certificates
	}
	return e, nil
}

// ID is the id a caller passes to reach this Space: its name.
func (e Entry) ID() string { return e.Name }

// Registry is the Spaces under one home directory, and the one client of
// each. Its methods reread the files on every call, so two Registry values
// (or processes) on the same home always agree after a change returns; each
// read also drops the clients of Spaces removed or changed since.
type Registry struct {
	home    string
	factory ClientFactory
	clients *clients

	// relayClient is the client of the relay's user API, for the login
	// relayKey (RelayClient).
	relayMu     sync.Mutex
	relayClient *relayapi.Client
	relayKey    RelayLogin
}

// ClientFactory builds the client of a Space's spacesd. It is the one place
// that decides how a Space is reached: a relay Space gets a client whose
// dialer goes through the relay (client.WithDialer), a direct one the plain
// client. It must depend on the entry alone (the registry keeps what it
// built for as long as the entry stays the same) and must not dial.
type ClientFactory func(Entry) (*client.Client, error)

// PlainClients reaches every Space at its URL directly, trusting its
// certificate as the entry says.
func PlainClients(e Entry) (*client.Client, error) {
	return client.New(e.URL, e.Token, client.WithTLS(e.TLS()))
}

// Option adjusts a Registry.
type Option func(*Registry)

// WithClients makes every client of the registry's Spaces come from f
// (default PlainClients).
func WithClients(f ClientFactory) Option {
	return func(r *Registry) {
		if f != nil {
			r.factory = f
		}
	}
}

type spacesDoc struct {
	Spaces []Entry `json:"spaces"`
}

type tokensDoc struct {
	Tokens map[string]string `json:"tokens"`
}

// Home returns the registry directory for home ("" = $CUA_HOME or ~/.cua).
func Home(home string) (string, error) {
	if home != "" {
		return home, nil
	}
	if h := os.Getenv(EnvHome); h != "" {
		return h, nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", api.Errorf(api.KindEnv, "no home directory for the registry; set %s: %w", EnvHome, err)
	}
	return filepath.Join(u, ".cua"), nil
}

// Open opens (and creates) the registry under home ("" = $CUA_HOME or ~/.cua).
//
// Every path of the bridge opens its registry here, once: the MCP server
// once per process (cua-bridge mcp and serve), the CLI once per command
// (cli.Run). Each then takes every client from the registry (Client,
// ClientFor), so the way a Space is reached is decided by one factory, and
// each Space has one client for the registry's life. Close the registry
// when done with it.
func Open(home string, opts ...Option) (*Registry, error) {
	dir, err := Home(home)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, homeMode); err != nil {
		return nil, api.Errorf(api.KindIO, "create registry directory %s: %w", dir, err)
	}
	r := &Registry{home: dir, factory: PlainClients}
	for _, o := range opts {
		o(r)
	}
	r.clients = newClients(r.factory)
	return r, nil
}

// Close drops the registry's clients and closes their idle connections.
// Calls in flight finish; the registry stays usable and builds clients
// anew.
func (r *Registry) Close() {
	r.clients.closeAll()
	r.relayMu.Lock()
	if r.relayClient != nil {
		r.relayClient.CloseIdleConnections()
		r.relayClient = nil
	}
	r.relayMu.Unlock()
}

// Dir is the registry's directory.
func (r *Registry) Dir() string { return r.home }

// Add registers (or replaces) a Space. name "" derives one from the URL's host.
func (r *Registry) Add(ctx context.Context, name, rawURL, token string) (Entry, error) {
	return r.AddEntry(ctx, Entry{Name: name, URL: rawURL, Token: token})
}

// AddEntry registers (or replaces) a Space with its trust settings (see
// CheckTLS). A Name "" derives one from the URL's host.
func (r *Registry) AddEntry(ctx context.Context, e Entry) (Entry, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, api.Errorf(api.KindCancelled, "add space: %w", err)
	}
	u, err := NormalizeURL(e.URL)
	if err != nil {
		return Entry{}, err
	}
	e.URL = u
	if e.Name == "" {
		e.Name = nameFromURL(u)
	}
	if err := ValidName(e.Name); err != nil {
		return Entry{}, err
	}
	if e, err = CheckTLS(e); err != nil {
		return Entry{}, err
	}
	name, token := e.Name, e.Token
	err = r.update(func(s *spacesDoc, t *tokensDoc) error {
		replaced := false
		for i := range s.Spaces {
			if s.Spaces[i].Name == name {
				s.Spaces[i] = e // the token is kept apart (json:"-")
				replaced = true
			}
		}
		if !replaced {
			s.Spaces = append(s.Spaces, e)
		}
		if token == "" {
			delete(t.Tokens, name)
		} else {
			t.Tokens[name] = token
		}
		return nil
	})
	if err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Remove forgets a Space (by exact name or any id Resolve accepts) and its token.
func (r *Registry) Remove(id string) error {
	if strings.HasPrefix(strings.TrimSpace(id), PrefixRelay) {
		return api.Errorf(api.KindInvalidArgument, "space %q is a computer on the relay, not a Space registered here", id).
			WithHint("relay_unregister_space (cua-bridge relay unregister) takes it off the relay")
	}
	return r.update(func(s *spacesDoc, t *tokensDoc) error {
		e, err := resolve(s, t, nil, id)
		if err != nil {
			return err
		}
		kept := s.Spaces[:0]
		found := false
		for _, x := range s.Spaces {
			if x.Name == e.Name {
				found = true
				continue
			}
			kept = append(kept, x)
		}
		if !found {
			return api.Errorf(api.KindNotFound, "space %q is not registered", id).WithHint("list_spaces shows the registered Spaces")
		}
		s.Spaces = kept
		delete(t.Tokens, e.Name)
		return nil
	})
}

// List returns every registered Space, sorted by name, with its token.
func (r *Registry) List() ([]Entry, error) {
	s, t, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(s.Spaces))
	for _, e := range s.Spaces {
		e.Token = t.Tokens[e.Name]
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Resolve finds the Space an id names: "direct:<host:port>" (a registered
// Space at that address, or an unregistered one reached without a token),
// "relay:<computer>", an exact name, or a unique name prefix.
func (r *Registry) Resolve(id string) (Entry, error) {
	s, t, err := r.snapshot()
	if err != nil {
		return Entry{}, err
	}
	var relay *RelayLogin
	if strings.HasPrefix(strings.TrimSpace(id), PrefixRelay) {
		if relay, err = r.relaySnapshot(); err != nil {
			return Entry{}, err
		}
	}
	return resolve(s, t, relay, id)
}

// Client resolves id and returns a client of its spacesd.
func (r *Registry) Client(id string) (*client.Client, Entry, error) {
	e, err := r.Resolve(id)
	if err != nil {
		return nil, Entry{}, err
	}
	c, err := r.ClientFor(e)
	if err != nil {
		return nil, Entry{}, err
	}
	return c, e, nil
}

// ClientFor returns the client of e's spacesd, registered or not (a Space
// is probed before it is added), from the registry's client factory: the
// same client for the same entry, while the registry holds it, so that
// calls share its connections. A probed entry that is then added keeps its
// client.
func (r *Registry) ClientFor(e Entry) (*client.Client, error) { return r.clients.get(e) }

// resolve finds id among the registered Spaces of s (tokens in t), or as
// a computer of the relay login (nil: not logged in).
func resolve(s *spacesDoc, t *tokensDoc, relay *RelayLogin, id string) (Entry, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return Entry{}, api.Errorf(api.KindInvalidArgument, "space is empty: pass a name, direct:<host:port> or relay:<computer>")
	}
	withToken := func(e Entry) Entry { e.Token = t.Tokens[e.Name]; return e }
	switch {
	case strings.HasPrefix(id, PrefixDirect):
		hostport := strings.TrimPrefix(id, PrefixDirect)
		if _, _, err := net.SplitHostPort(hostport); err != nil {
			return Entry{}, api.Errorf(api.KindInvalidArgument, "space %q: want direct:<host:port>", id)
		}
		for _, e := range s.Spaces {
			if u, err := url.Parse(e.URL); err == nil && u.Host == hostport {
				return withToken(e), nil
			}
		}
		return Entry{Name: id, URL: "http://" + hostport}, nil
	case strings.HasPrefix(id, PrefixRelay):
		// A computer of the logged-in user, reached through the relay
		// with the user's token: whether it exists (and is theirs) is the
		// relay's to say, at the first call.
		computer := strings.TrimPrefix(id, PrefixRelay)
		if err := protocol.CheckComputerName(computer); err != nil {
			return Entry{}, api.Errorf(api.KindInvalidArgument, "space %q: %s", id, api.AsError(err).Message)
		}
		if relay == nil {
			return Entry{}, notLoggedIn("space " + id)
		}
		return relayEntry(*relay, computer), nil
	}
	var matches []Entry
	for _, e := range s.Spaces {
		if e.Name == id {
			return withToken(e), nil
		}
		if strings.HasPrefix(e.Name, id) {
			matches = append(matches, e)
		}
	}
	switch len(matches) {
	case 0:
		return Entry{}, api.Errorf(api.KindNotFound, "no space named %q", id).WithHint("list_spaces shows the registered Spaces")
	case 1:
		return withToken(matches[0]), nil
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = m.Name
	}
	sort.Strings(names)
	return Entry{}, &api.Error{Kind: api.KindAmbiguousSandbox,
		Message: fmt.Sprintf("space %q matches %d spaces: %s", id, len(names), strings.Join(names, ", ")),
		Hint:    "use the full name"}
}

// ValidName checks a Space name.
func ValidName(name string) error {
	if len(name) > maxNameLen || !nameRE.MatchString(name) {
		return api.Errorf(api.KindInvalidArgument,
			"space name %q: use 1-%d letters, digits, '.', '_' or '-', starting with a letter or digit", name, maxNameLen)
	}
	return nil
}

// NormalizeURL checks a spacesd URL and returns it in canonical form
// ("host:port" becomes "http://host:port", no trailing slash).
func NormalizeURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", api.Errorf(api.KindInvalidArgument, "url is empty: pass the Space's spacesd URL, e.g. http://127.0.0.1:3211")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", api.Errorf(api.KindInvalidArgument, "url %q is not an http(s) URL of a spacesd", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

func nameFromURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	h := p.Hostname()
	if port := p.Port(); port != "" {
		h += "-" + port
	}
	return strings.NewReplacer(":", "-", "[", "", "]", "").Replace(h)
}

// snapshot reads both files under a shared lock, so it never sees one file
// of an update without the other.
func (r *Registry) snapshot() (*spacesDoc, *tokensDoc, error) {
	unlock, err := r.lock(false)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	s, t, err := r.read()
	if err != nil {
		return nil, nil, err
	}
	r.clients.sync(s, t)
	return s, t, nil
}

func (r *Registry) update(change func(*spacesDoc, *tokensDoc) error) error {
	unlock, err := r.lock(true)
	if err != nil {
		return err
	}
	defer unlock()
	s, t, err := r.read()
	if err != nil {
		return err
	}
	if err := change(s, t); err != nil {
		return err
	}
	// Tokens first: a crash between the two renames leaves a token without a
	// Space (harmless, dropped later) rather than a Space without its token.
	if err := r.writeJSON(TokensFile, t, tokensMode); err != nil {
		return err
	}
	if err := r.writeJSON(SpacesFile, s, spacesMode); err != nil {
		return err
	}
	// Under the lock still: a removed Space's client, or the old client of
	// one added again, goes now.
	r.clients.sync(s, t)
	return nil
}

func (r *Registry) read() (*spacesDoc, *tokensDoc, error) {
	s := &spacesDoc{}
	t := &tokensDoc{}
	if err := r.readJSON(SpacesFile, s); err != nil {
		return nil, nil, err
	}
	if err := r.readJSON(TokensFile, t); err != nil {
		return nil, nil, err
	}
	if t.Tokens == nil {
		t.Tokens = map[string]string{}
	}
	return s, t, nil
}

func (r *Registry) readJSON(name string, v any) error {
	p := filepath.Join(r.home, name)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return api.Errorf(api.KindIO, "read %s: %w", p, err)
	}
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return api.Errorf(api.KindJSON, "parse %s: %w (fix or remove the file)", p, err)
	}
	return nil
}

// writeJSON replaces name atomically: temp file in the same directory,
// fsync, rename, fsync the directory. A crash leaves the old file or the new
// one, never a mix.
func (r *Registry) writeJSON(name string, v any, mode fs.FileMode) error {
	p := filepath.Join(r.home, name)
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return api.Errorf(api.KindJSON, "encode %s: %w", p, err)
	}
	b = append(b, '\n')
	f, err := os.CreateTemp(r.home, "."+name+".tmp-*")
	if err != nil {
		return api.Errorf(api.KindIO, "write %s: %w", p, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// Chmod before any secret lands in the file.
	if err := f.Chmod(mode); err != nil {
		return api.Errorf(api.KindIO, "chmod %s: %w", tmp, err)
	}
	if _, err := f.Write(b); err != nil {
		return api.Errorf(api.KindIO, "write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return api.Errorf(api.KindIO, "fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return api.Errorf(api.KindIO, "close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return api.Errorf(api.KindIO, "replace %s: %w", p, err)
	}
	ok = true
	if d, err := os.Open(r.home); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
