package relayd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"unicode"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// The node's metrics: a small Prometheus text exposition, spelled as
// cua-spacesd spells its own (cua_<program>_..., "# TYPE" before each
// series), served on the admin socket only (GET /metrics there; cua-relay
// metrics prints it): the relay's public port answers the internet, and a
// per-computer series names customers' computers.

// metricsWriter is a part of the node with series of its own (the TURN
// server).
type metricsWriter interface{ WriteMetrics(io.Writer) }

// WriteMetrics writes the node's series: its counters (Metrics), the
// attached computers, and the TURN server's when it runs one.
func (s *Server) WriteMetrics(w io.Writer) {
	fmt.Fprintf(w, "# TYPE cua_relay_info gauge\ncua_relay_info{node=\"%s\",version=\"%s\"} 1\n", labelValue(s.cfg.Node), labelValue(s.cfg.Version))
	// Every counter of Metrics, by its field's name (BadTokens:
	// cua_relay_bad_tokens_total): a counter added there is exposed
	// without a line here.
	m := reflect.ValueOf(&s.metrics).Elem()
	for i := range m.NumField() {
		c, ok := m.Field(i).Addr().Interface().(*atomic.Int64)
		if !ok {
			continue
		}
		name := "cua_relay_" + snake(m.Type().Field(i).Name) + "_total"
		fmt.Fprintf(w, "# TYPE %s counter\n%s %d\n", name, name, c.Load())
	}
	s.mu.Lock()
	sessions, pending := len(s.sessions), len(s.pending)
	s.mu.Unlock()
	fmt.Fprintf(w, "# TYPE cua_relay_sessions gauge\ncua_relay_sessions %d\n", sessions)
	fmt.Fprintf(w, "# TYPE cua_relay_sessions_max gauge\ncua_relay_sessions_max %d\n", s.cfg.Limits.MaxSessions)
	fmt.Fprintf(w, "# TYPE cua_relay_data_pending gauge\ncua_relay_data_pending %d\n", pending)
	draining := 0
	if _, ok := s.draining(); ok {
		draining = 1
	}
	fmt.Fprintf(w, "# TYPE cua_relay_draining gauge\ncua_relay_draining %d\n", draining)
	s.writeNATSMetrics(w)
	if m := s.meshOf(); m != nil {
		fmt.Fprintf(w, "# TYPE cua_relay_trunks gauge\ncua_relay_trunks %d\n", m.Trunks())
	}
	if mw, ok := s.cfg.TURN.(metricsWriter); ok {
		mw.WriteMetrics(w)
	}
}

// snake spells a Go name in snake case: DataConns, data_conns.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// labelValue escapes a label's value as the text format wants (Go's %q
// would also escape what Prometheus reads as is).
var labelValue = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace

func (s *Server) adminMetrics(w http.ResponseWriter, _ *http.Request) {
	var b bytes.Buffer
	s.WriteMetrics(&b)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write(b.Bytes())
}

// Metrics answers the running relay's metrics, in the Prometheus text
// format.
func (c *AdminClient) Metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://relay-admin"+relayapi.PathAdminMetrics, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", c.transportErr(err, http.MethodGet, relayapi.PathAdminMetrics)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", api.Errorf(api.KindRelay, "admin GET %s: %w", relayapi.PathAdminMetrics, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", api.Errorf(api.KindRelay, "admin GET %s: HTTP %d", relayapi.PathAdminMetrics, resp.StatusCode)
	}
	return string(b), nil
}
