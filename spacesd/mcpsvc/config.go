package mcpsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// Bounds of the services file. It is the image's, read once at start; the
// bounds catch a wrong file (a log, a binary) with a clear error.
const (
	// MaxConfigBytes bounds the file.
	MaxConfigBytes = 1 << 20
	// MaxServices bounds the services one file declares.
	MaxServices = 64
	// maxNameBytes bounds a service's name, which is a tool argument.
	maxNameBytes = 64
	// DefaultInitTimeout is how long a service has to answer initialize:
	// a start of npx or a Python venv takes seconds, and a call waits this
	// long at most for a service that will never answer.
	DefaultInitTimeout = 20 * time.Second
	// MaxInitTimeout bounds initTimeoutSeconds.
	MaxInitTimeout = 5 * time.Minute
	// DefaultIdleTimeout is how long a service may go without a call
	// before it is stopped (a stdio service's process ends; an HTTP
	// service's session is closed).
	DefaultIdleTimeout = 10 * time.Minute
	// MaxIdleTimeout bounds idleTimeoutSeconds.
	MaxIdleTimeout = 24 * time.Hour
)

// Transports of a declared service.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Config is the services file: the MCP servers a Space's image declares.
// Its form is the one MCP hosts share ("mcpServers", each with command and
// args, or url), so a host's file can be reused, with two fields of ours.
type Config struct {
	Services []ServiceConfig
}

// ServiceConfig is one declared service.
type ServiceConfig struct {
	Name string
	// Transport is TransportStdio (Command) or TransportHTTP (URL).
	Transport string
	// Command and Args run a stdio service; Env is added to the daemon's
	// children's environment, Cwd is its working directory, User the
	// account it runs as ("" = the daemon's).
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	User    string
	// URL is a streamable-HTTP service on the guest's loopback, Headers
	// what every request to it carries (a token of its own, say).
	URL     string
	Headers map[string]string
	// InitTimeout bounds the answer to initialize, IdleTimeout the time
	// without a call before the service is stopped.
	InitTimeout, IdleTimeout time.Duration
}

// configFile is the JSON form of the file.
type configFile struct {
	MCPServers map[string]serviceFile `json:"mcpServers"`
}

type serviceFile struct {
	// Type is optional: "stdio" or "http" ("streamable-http" too, as some
	// hosts write it); otherwise command or url says it.
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	User    string            `json:"user"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// InitTimeoutSeconds and IdleTimeoutSeconds are ours.
	InitTimeoutSeconds *float64 `json:"initTimeoutSeconds"`
	IdleTimeoutSeconds *float64 `json:"idleTimeoutSeconds"`
}

// LoadConfig reads and checks the services file at path.
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "MCP services file %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, api.Errorf(api.KindIO, "MCP services file %s: %w", path, err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "MCP services file %s: %v", path, err).
			WithHint("docs/operations.md describes the file; packaging/mcp-services.json is an example")
	}
	return c, nil
}

// ParseConfig checks a services file's bytes. Anything it does not know is
// refused, with the service and field named: a typo must not quietly
// leave a service out or run it otherwise.
func ParseConfig(b []byte) (*Config, error) {
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("over %d bytes", MaxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f configFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a services file: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	if f.MCPServers == nil {
		return nil, errors.New(`no "mcpServers" object`)
	}
	if err := uniqueNames(b); err != nil {
		return nil, err
	}
	if len(f.MCPServers) > MaxServices {
		return nil, fmt.Errorf("%d services, more than the %d a file may declare", len(f.MCPServers), MaxServices)
	}
	c := &Config{}
	for name, sf := range f.MCPServers {
		s, err := sf.check(name)
		if err != nil {
			return nil, fmt.Errorf("service %q: %v", name, err)
		}
		c.Services = append(c.Services, s)
	}
	sort.Slice(c.Services, func(i, j int) bool { return c.Services[i].Name < c.Services[j].Name })
	return c, nil
}

func (sf serviceFile) check(name string) (ServiceConfig, error) {
	s := ServiceConfig{Name: name, Command: sf.Command, Args: sf.Args, Env: sf.Env, Cwd: sf.Cwd, User: sf.User,
		URL: sf.URL, Headers: sf.Headers, InitTimeout: DefaultInitTimeout, IdleTimeout: DefaultIdleTimeout}
	if err := checkName(name); err != nil {
		return s, err
	}
	switch {
	case sf.Command != "" && sf.URL != "":
		return s, errors.New("both command and url: a service is one or the other")
	case sf.Command != "":
		s.Transport = TransportStdio
	case sf.URL != "":
		s.Transport = TransportHTTP
	default:
		return s, errors.New("neither command (a stdio server) nor url (a streamable-HTTP server on loopback)")
	}
	switch sf.Type {
	case "", s.Transport, "streamable-http":
		if sf.Type == "streamable-http" && s.Transport != TransportHTTP {
			return s, errors.New(`type "streamable-http" needs a url`)
		}
	default:
		return s, fmt.Errorf("type %q: want stdio or http (or leave it out)", sf.Type)
	}
	var err error
	if s.InitTimeout, err = seconds("initTimeoutSeconds", sf.InitTimeoutSeconds, DefaultInitTimeout, MaxInitTimeout); err != nil {
		return s, err
	}
	if s.IdleTimeout, err = seconds("idleTimeoutSeconds", sf.IdleTimeoutSeconds, DefaultIdleTimeout, MaxIdleTimeout); err != nil {
		return s, err
	}
	if s.Transport == TransportStdio {
		return s, s.checkStdio()
	}
	return s, s.checkHTTP()
}

func (s ServiceConfig) checkStdio() error {
	if len(s.Headers) > 0 {
		return errors.New("headers are for a url service")
	}
	for _, v := range append([]string{s.Command, s.Cwd, s.User}, s.Args...) {
		if strings.ContainsRune(v, 0) {
			return errors.New("a NUL byte in command, args, cwd or user")
		}
	}
	if s.Cwd != "" && !strings.HasPrefix(s.Cwd, "/") {
		return fmt.Errorf("cwd %q must be absolute", s.Cwd)
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("env %q: a name must be non-empty without = or NUL, a value without NUL", k)
		}
	}
	return nil
}

func (s ServiceConfig) checkHTTP() error {
	if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" || s.User != "" {
		return errors.New("args, env, cwd and user are for a command service")
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return fmt.Errorf("url: %v", err)
	}
	if u.Scheme != "http" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("url %q: want http://<loopback address>[:port]/path, without credentials or fragment", s.URL)
	}
	if !loopbackHost(u.Hostname()) {
		return fmt.Errorf("url %q: the host must be the guest's loopback (127.0.0.1, ::1 or localhost): a service elsewhere is not the Space's", s.URL)
	}
	for k, v := range s.Headers {
		if !validHeaderName(k) || strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %q: a name of letters, digits and -, a value on one line", k)
		}
	}
	return nil
}

// loopbackHost is a loopback IP address or localhost.
func loopbackHost(h string) bool {
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback()
	}
	return strings.EqualFold(h, "localhost")
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func checkName(name string) error {
	if name == "" || len(name) > maxNameBytes {
		return fmt.Errorf("a name is 1 to %d characters", maxNameBytes)
	}
	if name == spacetools.BuiltinService {
		return fmt.Errorf("%q is the daemon's own service", name)
	}
	for _, r := range name {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return errors.New("a name is letters, digits, '.', '_' and '-'")
		}
	}
	return nil
}

// seconds reads an optional number of seconds within (0, max].
func seconds(field string, v *float64, def, max time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if !(*v > 0) || *v > max.Seconds() {
		return 0, fmt.Errorf("%s %v: want more than 0 and at most %v", field, *v, max.Seconds())
	}
	return time.Duration(*v * float64(time.Second)), nil
}

// uniqueNames refuses a key given twice, at the top or in mcpServers,
// which JSON decoding would quietly resolve to the last one (or merge).
func uniqueNames(b []byte) error {
	if k, err := duplicateKey(b); err != nil || k != "" {
		return errors.Join(err, fmtIf(k != "", "%q is given twice", k))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return err
	}
	servers, ok := top["mcpServers"]
	if !ok {
		return errors.New(`the services are under "mcpServers", spelled so`)
	}
	if k, err := duplicateKey(servers); err != nil || k != "" {
		return errors.Join(err, fmtIf(k != "", "service %q is declared twice", k))
	}
	return nil
}

// duplicateKey is the first key the JSON object b holds twice, or "".
func duplicateKey(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return "", err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		k, _ := t.(string)
		if seen[k] {
			return k, nil
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", nil
}

// fmtIf is the error of format when cond holds, else nil.
func fmtIf(cond bool, format string, a ...any) error {
	if !cond {
		return nil
	}
	return fmt.Errorf(format, a...)
}
