package store

import (
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// FuzzClusterOptions: whatever the flags hold, validate answers (never
// panics), and options it accepts make nats-server options with the route
// credentials on every route and none in the operator's text.
func FuzzClusterOptions(f *testing.F) {
	for _, c := range [][2]string{
		{"127.0.0.1:6222", "nats://127.0.0.1:6223,nats://127.0.0.1:6224"},
		{":6222", "nats://relay2.example.com:6222"},
		{"[::1]:6222", "nats://[::1]:6223"},
		{"127.0.0.1", "nats://u:p@127.0.0.1:6223"},
		{"host:0", "http://x:1"},
		{"host:99999", "nats://:6222"},
		{"", ""},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, listen, routes string) {
		c := &ClusterOptions{Name: "relays", Listen: listen, Key: []byte("0123456789abcdef")}
		if routes != "" {
			c.Routes = strings.Split(routes, ",")
		}
		if c.validate() != nil {
			return
		}
		var o server.Options
		if err := c.applyCluster(&o, "tok"); err != nil {
			t.Fatalf("validated %+v, then: %v", c, err)
		}
		if len(o.Routes) != len(c.Routes) || o.Cluster.Port <= 0 || o.DontListen || o.Host != "127.0.0.1" {
			t.Fatalf("options of %+v: %+v", c, o)
		}
		for _, r := range o.Routes {
			if p, _ := r.User.Password(); r.User.Username() != routeUser || p != routePassword(c.Key) {
				t.Fatalf("route %v without the mesh credentials", r)
			}
		}
	})
}
