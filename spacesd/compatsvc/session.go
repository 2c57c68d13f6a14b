package compatsvc

import (
	"context"
	"encoding/json"

	"github.com/trycua/cua-spacesd/api"
)

type versionResult struct {
	Protocol int    `json:"protocol"`
	Package  string `json:"package"`
}

// version answers computer-server's protocol version and this daemon's.
func version(_ context.Context, c *conn, _ none) (any, error) {
	return versionResult{Protocol: protocolVersion, Package: "cua-spacesd " + c.svc.version}, nil
}

// authParams are the params of authenticate. container_name (the VM's
// name, sent in X-VM-Name and X-Container-Name too) is read and ignored:
// a Space has one daemon, and the key alone says who may use it.
type authParams struct {
	APIKey        string `json:"api_key"`
	ContainerName string `json:"container_name"`
}

type authResult struct {
	Message string `json:"message"`
}

// authenticate answers an authenticate message of a client that is
// already authenticated (by its upgrade's header, or by a daemon without a
// token): the clients send one after every connect. A key that is not the
// token is refused all the same. The first message of a WebSocket that
// authenticates in band is handled before any command (see ws.go).
func authenticate(ctx context.Context, c *conn, p authParams) (any, error) {
	_, end, err := c.svc.host.Authenticate(ctx, p.APIKey)
	if err != nil {
		return nil, errAuthFailed
	}
	end(nil)
	return authResult{Message: "Authentication successful"}, nil
}

var errAuthFailed = api.Errorf(api.KindUnauthenticated, "Authentication failed: the key is not this Space's token").
	WithHint("pass the Space's cua-spacesd token as the client's API key")

// refused is a command of computer-server that a Space cannot serve: it is
// answered with why, rather than as an unknown command.
func refused(name, why string) command {
	return command{bind: func(json.RawMessage) (func(context.Context, *conn) (any, error), error) {
		return func(context.Context, *conn) (any, error) {
			return nil, &api.Error{Kind: api.KindCapabilityMissing, Message: name + " is not served by cua-spacesd: " + why,
				Hint: "see docs/computer-server.md for what each command maps onto"}
		}, nil
	}}
}
