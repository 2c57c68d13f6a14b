package tools

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// SpaceView is a Space as list_spaces shows it.
type SpaceView struct {
	Space    string   `json:"space"`
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Online   bool     `json:"online"`
	Version  string   `json:"version,omitempty"`
	Features []string `json:"features"`
	// Role is the user's on a relay:<computer>: owner, or viewer or
	// editor for a computer shared with them.
	Role string `json:"role,omitempty"`
	// Error says why the Space is offline (kind: message).
	Error string `json:"error,omitempty"`
}

// probe asks a Space for its capabilities, bounded by probeTimeout. Its
// client comes from the registry's factory, as every other call's does, so a
// Space is probed the way it will be reached.
func (d *Deps) probe(ctx context.Context, e registry.Entry) (SpaceView, *api.Capabilities, error) {
	v := SpaceView{Space: e.Name, Name: e.Name, URL: e.URL, Features: []string{}}
	c, err := d.Registry.ClientFor(e)
	if err != nil {
		return v, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	caps, err := spacetools.FetchCapabilities(ctx, c)
	if err != nil {
		v.Error = fmt.Sprintf("%s: %s", api.KindOf(err), api.AsError(err).Message)
		return v, nil, err
	}
	v.Online = true
	v.Version = caps.Version
	for _, f := range api.AllFeatures {
		if ok, _ := caps.Supports(f); ok {
			v.Features = append(v.Features, string(f))
		}
	}
	return v, caps, nil
}

// RemovedSpace is the structured answer of remove_space.
type RemovedSpace struct {
	Removed string `json:"removed"`
}

// SpaceList is the structured answer of list_spaces.
type SpaceList struct {
	Spaces []SpaceView `json:"spaces"`
	// RelayError says why the relay's computers are missing from Spaces
	// (kind: message): the relay could not be reached, or refused the
	// login. The local Spaces are listed all the same.
	RelayError string `json:"relay_error,omitempty"`
}

// listRelaySpaces lists the logged-in user's computers as relay:<computer>,
// online as the relay says, each online one probed through the relay for
// its version and features (bounded by probeTimeout). No login: none.
func (d *Deps) listRelaySpaces(ctx context.Context) ([]SpaceView, error) {
	lctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	rs, err := d.Registry.RelaySpaces(lctx)
	if err != nil {
		return nil, err
	}
	views := make([]SpaceView, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		views[i] = SpaceView{Space: r.Entry.Name, Name: r.Computer.Name, URL: r.Entry.URL,
			Online: r.Computer.Online, Version: r.Computer.DaemonVersion, Features: []string{}, Role: string(r.Computer.Role)}
		if !r.Computer.Online {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := d.probe(ctx, r.Entry)
			if err != nil {
				views[i].Error = v.Error
				return
			}
			views[i].Version, views[i].Features = v.Version, v.Features
		}()
	}
	wg.Wait()
	return views, nil
}

func addSpaceTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:    "add_space",
		NoSpace: true,
		Title:   "Add a Space",
		Hints:   mcpserve.Hints{Destructive: true, Idempotent: true, OpenWorld: true},
		Output:  spacetools.OutputOf[SpaceView](),
		Description: "Register a Space (a machine running cua-spacesd) under a name, with its URL and bearer token. " +
			"The Space is probed first: a wrong token or a URL without spacesd is refused. Re-adding a name replaces it.",
		Schema: spacetools.Object([]string{"url"}, map[string]*jsonschema.Schema{
			"url":         spacetools.NonEmpty("The spacesd URL, e.g. http://127.0.0.1:3211 (host:port means http), or https://HOST:PORT for a Space serving TLS."),
			"token":       spacetools.Str("The Space's bearer token (empty for a loopback spacesd without one)."),
			"name":        spacetools.Str("A short name for the Space (letters, digits, '.', '_', '-'); default derived from the URL."),
			"fingerprint": spacetools.Str("For an https Space: pin its certificate by the sha256:... fingerprint cua-spacesd printed (--tls-self-signed)."),
			"ca_file":     spacetools.Str("For an https Space: a PEM file of the CAs that sign its certificate, on this machine under the folders the bridge's tools may use (as upload's path)."),
		}),
		Errors: []api.Kind{api.KindUnauthenticated, api.KindSpacesdNotAvailable, api.KindEnv, api.KindNotFound, api.KindIO},
		Result: "the Space as list_spaces shows it: {space, name, url, online, version, features}",
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct {
				URL, Token, Name, Fingerprint string
				CAFile                        string `json:"ca_file"`
			}
			if err := spacetools.Decode(c, "add_space", &a); err != nil {
				return nil, err
			}
			u, err := registry.NormalizeURL(a.URL)
			if err != nil {
				return nil, err
			}
			if a.Name != "" {
				if err := registry.ValidName(a.Name); err != nil {
					return nil, err
				}
			}
			if a.CAFile != "" {
				if a.CAFile, err = d.hostCAFile(a.CAFile); err != nil {
					return nil, err
				}
			}
			entry, err := registry.CheckTLS(registry.Entry{Name: a.Name, URL: u, Token: a.Token, Fingerprint: a.Fingerprint, CAFile: a.CAFile})
			if err != nil {
				return nil, err
			}
			// Probe before writing: a Space that refuses the token or its
			// certificate, or runs no spacesd, is never registered.
			v, _, err := d.probe(ctx, entry)
			if err != nil {
				return nil, err
			}
			e, err := d.Registry.AddEntry(ctx, entry)
			if err != nil {
				return nil, err
			}
			d.forget()
			v.Space, v.Name, v.URL = e.Name, e.Name, e.URL
			return &mcpserve.Result{Text: fmt.Sprintf("added space %s (%s), spacesd %s, features: %s", e.Name, e.URL, v.Version, strings.Join(v.Features, ", ")), Structured: v}, nil
		},
	}
}

// hostCAFile checks add_space's ca_file as every host path of the tools is
// checked (under the roots, never in $CUA_HOME, the same refusal whether
// or not a path outside exists) and answers it resolved, for the registry
// to keep. Unconfined, the tool read any file of this machine, and its
// errors told which paths existed.
func (d *Deps) hostCAFile(p string) (string, error) {
	if d.Host == nil {
		return "", api.Errorf(api.KindInvalidArgument, "add_space: ca_file: this bridge gives its tools no folder of this machine").
			WithHint("start the bridge with --root DIR, or pin the certificate with fingerprint instead")
	}
	f, err := d.Host.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", api.Errorf(api.KindIO, "ca_file %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return "", api.Errorf(api.KindInvalidArgument, "ca_file %s is not a regular file (a PEM file of CA certificates)", p)
	}
	return f.Name(), nil
}

func removeSpaceTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:        "remove_space",
		NoSpace:     true,
		Title:       "Remove a Space",
		Hints:       mcpserve.Hints{Destructive: true, Idempotent: true},
		Output:      spacetools.OutputOf[RemovedSpace](),
		Description: "Forget a registered Space and its token. The Space itself is not touched.",
		Schema:      spacetools.Object([]string{"space"}, map[string]*jsonschema.Schema{"space": SpaceArg()}),
		Errors:      []api.Kind{api.KindNotFound, api.KindAmbiguousSandbox, api.KindIO},
		Result:      "{removed: <name>}",
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct{ Space string }
			if err := spacetools.Decode(c, "remove_space", &a); err != nil {
				return nil, err
			}
			e, err := d.Registry.Resolve(a.Space)
			if err != nil {
				return nil, err
			}
			if err := d.Registry.Remove(e.Name); err != nil {
				return nil, err
			}
			d.forget()
			return &mcpserve.Result{Text: "removed space " + e.Name, Structured: RemovedSpace{Removed: e.Name}}, nil
		},
	}
}

func listSpacesTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:    "list_spaces",
		NoSpace: true,
		Title:   "List the Spaces",
		Hints:   mcpserve.Hints{ReadOnly: true},
		Output:  spacetools.OutputOf[SpaceList](),
		Description: "List the registered Spaces, each probed live: online, spacesd version and supported features. " +
			"An offline Space is listed with online=false and the reason. When the bridge is logged in to a relay, " +
			"the account's computers on it, and those shared with it (role viewer or editor), follow as relay:<computer>, online as the relay says; " +
			"a relay that cannot be reached leaves them out and says why in relay_error, and the local Spaces are listed all the same.",
		Schema: spacetools.Object(nil, map[string]*jsonschema.Schema{}),
		Errors: []api.Kind{api.KindIO},
		Result: "{spaces: [{space, name, url, online, version, features, role? (owner, viewer or editor on a relay:<computer>), error?}], relay_error?}",
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			entries, err := d.Registry.List()
			if err != nil {
				return nil, err
			}
			views := make([]SpaceView, len(entries))
			var wg sync.WaitGroup
			for i, e := range entries {
				wg.Add(1)
				go func() {
					defer wg.Done()
					views[i], _, _ = d.probe(ctx, e)
				}()
			}
			var relayViews []SpaceView
			var relayErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				relayViews, relayErr = d.listRelaySpaces(ctx)
			}()
			wg.Wait()
			views = append(views, relayViews...)
			list := SpaceList{Spaces: views}
			var b strings.Builder
			if relayErr != nil {
				list.RelayError = fmt.Sprintf("%s: %s", api.KindOf(relayErr), api.AsError(relayErr).Message)
				fmt.Fprintf(&b, "relay not listed (%s); the local Spaces follow\n", list.RelayError)
			}
			if len(views) == 0 {
				b.WriteString("no spaces registered; add one with add_space")
			}
			for _, v := range views {
				state := "online " + v.Version
				if !v.Online {
					state = "offline (" + v.Error + ")"
				}
				fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", v.Space, v.URL, state, strings.Join(v.Features, ","))
			}
			return &mcpserve.Result{Text: strings.TrimRight(b.String(), "\n"), Structured: list}, nil
		},
	}
}
