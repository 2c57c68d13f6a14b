package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
)

// SpaceView is a Space as list_spaces shows it.
type SpaceView struct {
	Space    string   `json:"space"`
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Online   bool     `json:"online"`
	Version  string   `json:"version,omitempty"`
	Features []string `json:"features"`
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
	caps, err := fetchCapabilities(ctx, c)
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
}

func addSpaceTool() *Tool {
	return &Tool{
		Name:   "add_space",
		Title:  "Add a Space",
		Hints:  Hints{Destructive: true, Idempotent: true, OpenWorld: true},
		Output: outputOf[SpaceView](),
		Description: "Register a Space (a machine running cua-spacesd) under a name, with its URL and bearer token. " +
			"The Space is probed first: a wrong token or a URL without spacesd is refused. Re-adding a name replaces it.",
		Schema: object([]string{"url"}, map[string]*jsonschema.Schema{
			"url":         nonEmpty("The spacesd URL, e.g. http://127.0.0.1:3211 (host:port means http), or https://HOST:PORT for a Space serving TLS."),
			"token":       str("The Space's bearer token (empty for a loopback spacesd without one)."),
			"name":        str("A short name for the Space (letters, digits, '.', '_', '-'); default derived from the URL."),
			"fingerprint": str("For an https Space: pin its certificate by the sha256:... fingerprint cua-spacesd printed (--tls-self-signed)."),
			"ca_file":     str("For an https Space: a PEM file (on this machine) of the CAs that sign its certificate."),
		}),
		Errors: []api.Kind{api.KindUnauthenticated, api.KindSpacesdNotAvailable, api.KindEnv, api.KindIO},
		Result: "the Space as list_spaces shows it: {space, name, url, online, version, features}",
		Run: func(ctx context.Context, c *Call) (*Result, error) {
			var a struct {
				URL, Token, Name, Fingerprint string
				CAFile                        string `json:"ca_file"`
			}
			if err := decode(c, "add_space", &a); err != nil {
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
			entry, err := registry.CheckTLS(registry.Entry{Name: a.Name, URL: u, Token: a.Token, Fingerprint: a.Fingerprint, CAFile: a.CAFile})
			if err != nil {
				return nil, err
			}
			// Probe before writing: a Space that refuses the token or its
			// certificate, or runs no spacesd, is never registered.
			v, _, err := c.deps.probe(ctx, entry)
			if err != nil {
				return nil, err
			}
			e, err := c.deps.Registry.AddEntry(ctx, entry)
			if err != nil {
				return nil, err
			}
			c.deps.forget()
			v.Space, v.Name, v.URL = e.Name, e.Name, e.URL
			return &Result{Text: fmt.Sprintf("added space %s (%s), spacesd %s, features: %s", e.Name, e.URL, v.Version, strings.Join(v.Features, ", ")), Structured: v}, nil
		},
	}
}

func removeSpaceTool() *Tool {
	return &Tool{
		Name:        "remove_space",
		Title:       "Remove a Space",
		Hints:       Hints{Destructive: true, Idempotent: true},
		Output:      outputOf[RemovedSpace](),
		Description: "Forget a registered Space and its token. The Space itself is not touched.",
		Schema:      object([]string{"space"}, map[string]*jsonschema.Schema{"space": spaceArg()}),
		Errors:      []api.Kind{api.KindNotFound, api.KindAmbiguousSandbox, api.KindIO},
		Result:      "{removed: <name>}",
		Run: func(ctx context.Context, c *Call) (*Result, error) {
			var a struct{ Space string }
			if err := decode(c, "remove_space", &a); err != nil {
				return nil, err
			}
			e, err := c.deps.Registry.Resolve(a.Space)
			if err != nil {
				return nil, err
			}
			if err := c.deps.Registry.Remove(e.Name); err != nil {
				return nil, err
			}
			c.deps.forget()
			return &Result{Text: "removed space " + e.Name, Structured: RemovedSpace{Removed: e.Name}}, nil
		},
	}
}

func listSpacesTool() *Tool {
	return &Tool{
		Name:   "list_spaces",
		Title:  "List the Spaces",
		Hints:  Hints{ReadOnly: true},
		Output: outputOf[SpaceList](),
		Description: "List the registered Spaces, each probed live: online, spacesd version and supported features. " +
			"An offline Space is listed with online=false and the reason.",
		Schema: object(nil, map[string]*jsonschema.Schema{}),
		Errors: []api.Kind{api.KindIO},
		Result: "{spaces: [{space, name, url, online, version, features, error?}]}",
		Run: func(ctx context.Context, c *Call) (*Result, error) {
			entries, err := c.deps.Registry.List()
			if err != nil {
				return nil, err
			}
			views := make([]SpaceView, len(entries))
			var wg sync.WaitGroup
			for i, e := range entries {
				wg.Add(1)
				go func() {
					defer wg.Done()
					views[i], _, _ = c.deps.probe(ctx, e)
				}()
			}
			wg.Wait()
			var b strings.Builder
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
			return &Result{Text: strings.TrimRight(b.String(), "\n"), Structured: SpaceList{Spaces: views}}, nil
		},
	}
}

func spaceCapabilitiesTool() *Tool {
	return &Tool{
		Name:   "space_capabilities",
		Title:  "A Space's capabilities",
		Hints:  Hints{ReadOnly: true},
		Output: outputOf[api.Capabilities](),
		Description: "What a Space's cua-spacesd supports: version, OS, arch, display server, limits, and every feature " +
			"with supported and, when unsupported, the limitation a person can act on.",
		Schema:     object([]string{"space"}, map[string]*jsonschema.Schema{"space": spaceArg()}),
		TakesSpace: true,
		Result:     "the capabilities object of GET /v1/capabilities",
		Run: func(ctx context.Context, c *Call) (*Result, error) {
			// Fresh, not the gate's cached copy: this is the call that answers.
			caps, err := fetchCapabilities(ctx, c.Space.Client)
			if err != nil {
				return nil, err
			}
			b, _ := json.MarshalIndent(caps, "", "  ")
			return &Result{Text: string(b), Structured: caps}, nil
		},
	}
}
