package main

import (
	"errors"
	"flag"
	"strings"

	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
)

// relayFlags are the serve flags of relay_attach (docs/api.md, Relay).
type relayFlags struct {
	urls, tokenFile, fingerprint, ca *string
}

func newRelayFlags(fs *flag.FlagSet) relayFlags {
	return relayFlags{
		urls:        fs.String("relay", "", "attach to cua-relay: wss://HOST[,wss://HOST2] (the nodes of one relay: the last good one first, the next when a node dies, refuses or sends go_away); wins over the attachment kept in the state dir"),
		tokenFile:   fs.String("relay-token-file", "", "with --relay: the file holding the computer token (cuac_...), read again before every dial"),
		fingerprint: fs.String("relay-fingerprint", "", "with --relay: trust the relay's certificate by its sha256:... fingerprint"),
		ca:          fs.String("relay-ca", "", "with --relay: trust the relay's certificate by these PEM CAs"),
	}
}

func (f relayFlags) check() error {
	switch {
	case *f.urls == "" && (*f.tokenFile != "" || *f.fingerprint != "" || *f.ca != ""):
		return errors.New("--relay-token-file, --relay-fingerprint and --relay-ca go with --relay")
	case *f.urls != "" && *f.tokenFile == "":
		return errors.New("--relay needs --relay-token-file")
	}
	return nil
}

// options are the relay service's options of the flags.
func (f relayFlags) options(stateDir, version string) relaysvc.Options {
	o := relaysvc.Options{StateDir: stateDir, Version: version, TokenFile: *f.tokenFile, Fingerprint: *f.fingerprint, CAFile: *f.ca}
	for _, u := range strings.Split(*f.urls, ",") {
		if u = strings.TrimSpace(u); u != "" {
			o.URLs = append(o.URLs, u)
		}
	}
	return o
}
