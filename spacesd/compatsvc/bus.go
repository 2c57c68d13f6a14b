package compatsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// The bus's message: {"command": name, "params": {...}}, answered by
// {"success": true, ...result} or {"success": false, "error": message}.
// computer-server's clients send every command in this one shape, over the
// WebSocket and in the body of POST /cmd alike.

// maxSuggestions bounds the close names an unknown command is answered with.
const maxSuggestions = 5

// message is one decoded command of the bus.
type message struct {
	Command string
	// Params is the params object as sent (nil when absent or null).
	Params json.RawMessage
}

// decodeMessage reads one message of the bus. Fields other than command
// and params are ignored, as computer-server ignores them.
func decodeMessage(b []byte) (message, error) {
	var raw struct {
		Command json.RawMessage `json:"command"`
		Params  json.RawMessage `json:"params"`
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return message{}, api.Errorf(api.KindInvalidArgument, "the message is empty; send {\"command\": name, \"params\": {...}}")
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return message{}, api.Errorf(api.KindInvalidArgument, "the message is a JSON %s, not an object; send {\"command\": name, \"params\": {...}}", typeErr.Value)
		}
		return message{}, api.Errorf(api.KindInvalidArgument, "the message is not valid JSON (%v); send {\"command\": name, \"params\": {...}}", err)
	}
	var m message
	switch cmd := bytes.TrimSpace(raw.Command); {
	case len(cmd) == 0 || string(cmd) == "null":
		return message{}, api.Errorf(api.KindInvalidArgument, "the message names no command; send {\"command\": name, \"params\": {...}}")
	case cmd[0] != '"':
		return message{}, api.Errorf(api.KindInvalidArgument, "command must be a string, got %s", jsonKind(cmd))
	default:
		if err := json.Unmarshal(cmd, &m.Command); err != nil {
			return message{}, api.Errorf(api.KindInvalidArgument, "command is not a valid string: %v", err)
		}
	}
	if m.Command == "" {
		return message{}, api.Errorf(api.KindInvalidArgument, "command is empty; name one (the answer to an unknown one lists close names)")
	}
	switch p := bytes.TrimSpace(raw.Params); {
	case len(p) == 0 || string(p) == "null":
	case p[0] != '{':
		return message{}, api.Errorf(api.KindInvalidArgument, "params of %s must be a JSON object, got %s", shortName(m.Command), jsonKind(p))
	default:
		m.Params = p
	}
	return m, nil
}

// jsonKind names the type of a JSON value for a message.
func jsonKind(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// shortName quotes a name from the client for a message, cut to a length a
// person reads.
func shortName(s string) string { return fmt.Sprintf("%.64q", s) }

// call is a command bound to its params, ready to run on a connection.
type call struct {
	name string
	run  func(ctx context.Context, c *conn) (any, error)
}

// command is one entry of the bus's table: how to bind its params.
type command struct {
	bind func(params json.RawMessage) (func(ctx context.Context, c *conn) (any, error), error)
	// alias names the command this one is another name of (computer-server's
	// COMMAND_ALIASES), "" for a command of its own.
	alias string
}

// handle makes a command whose params decode into a P. Params the command
// does not take are ignored, as computer-server filters them; required
// names the params that must be present and not null.
func handle[P any](run func(ctx context.Context, c *conn, p P) (any, error), required ...string) command {
	return command{bind: func(raw json.RawMessage) (func(context.Context, *conn) (any, error), error) {
		p, err := bindParams[P](raw, required)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, c *conn) (any, error) { return run(ctx, c, p) }, nil
	}}
}

// none is the params of a command that takes none.
type none struct{}

// bindParams decodes a params object into a P, naming the param at fault
// and the JSON type it wants when a value has the wrong type.
func bindParams[P any](raw json.RawMessage, required []string) (P, error) {
	var p P
	if len(required) > 0 {
		var present map[string]json.RawMessage
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &present); err != nil {
				return p, api.Errorf(api.KindInvalidArgument, "params are not a JSON object: %v", err)
			}
		}
		for _, name := range required {
			if v, ok := present[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
				return p, api.Errorf(api.KindInvalidArgument, "missing the parameter %s", name)
			}
		}
	}
	if len(raw) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		var typeErr *json.UnmarshalTypeError
		var ae *api.Error
		switch {
		case errors.As(err, &ae):
			return p, ae
		case errors.As(err, &typeErr):
			return p, api.Errorf(api.KindInvalidArgument, "parameter %s: want %s, got %s", typeErr.Field, goKind(typeErr.Type), typeErr.Value)
		}
		return p, api.Errorf(api.KindInvalidArgument, "params: %v", err)
	}
	return p, nil
}

// goKind names what a Go type takes in JSON words.
func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return goKind(t.Elem())
	}
	return "an object"
}

// bind finds a message's command in the table and binds its params. An
// unknown command is answered with the close names the table has.
func bind(table map[string]command, m message) (call, error) {
	cmd, ok := table[m.Command]
	if !ok {
		return call{}, unknownCommand(table, m.Command)
	}
	name := m.Command
	if cmd.alias != "" {
		name = cmd.alias
		cmd = table[cmd.alias]
	}
	run, err := cmd.bind(m.Params)
	if err != nil {
		return call{}, api.Errorf(api.KindInvalidArgument, "%s: %s", name, api.AsError(err).Message)
	}
	return call{name: name, run: run}, nil
}

func unknownCommand(table map[string]command, name string) error {
	msg := "unknown command " + shortName(name)
	if close := suggest(table, name); len(close) > 0 {
		msg += ". Did you mean: " + strings.Join(close, ", ") + "?"
	} else {
		msg += " (docs/computer-server.md lists the commands)"
	}
	return api.Errorf(api.KindInvalidArgument, "%s", msg).WithHint("check the command's name against the list of commands")
}

// suggest lists the table's names closest to name: those that contain it
// or that it contains, then those within a small edit distance, nearest
// first.
func suggest(table map[string]command, name string) []string {
	type scored struct {
		name string
		d    int
	}
	in := strings.ToLower(name)
	if len(in) > 64 {
		return nil // no command is that long; nothing is close
	}
	var found []scored
	for cand := range table {
		d := editDistance(in, cand)
		switch {
		case len(in) >= 3 && (strings.Contains(cand, in) || strings.Contains(in, cand)):
			d = min(d, 1)
		case d > max(2, len(in)/3):
			continue
		}
		found = append(found, scored{cand, d})
	}
	slices.SortFunc(found, func(a, b scored) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, maxSuggestions)
	for _, s := range found {
		if len(out) == maxSuggestions {
			break
		}
		out = append(out, s.name)
	}
	return out
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// success is the answer of a command that ran: {"success": true} and the
// result's fields.
func success(result any) ([]byte, error) {
	if result == nil {
		return []byte(`{"success":true}`), nil
	}
	b, err := json.Marshal(result)
	if err != nil {
		return nil, api.Errorf(api.KindJSON, "encode the answer: %w", err)
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, api.Errorf(api.KindJSON, "the answer is not a JSON object")
	}
	if string(b) == "{}" {
		return []byte(`{"success":true}`), nil
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, `{"success":true,`...)
	return append(out, b[1:]...), nil
}

// failureAnswer is the answer of a command that failed or could not run.
// error is computer-server's field (its clients throw it); kind, hint and
// retryable are ours, for a client that reads them.
type failureAnswer struct {
	Success   bool     `json:"success"`
	Error     string   `json:"error"`
	Kind      api.Kind `json:"kind"`
	Hint      string   `json:"hint,omitempty"`
	Retryable bool     `json:"retryable"`
}

// failure answers err; the fields of partial, when set, go along (what a
// command that timed out had written, say).
func failure(err error, partial any) []byte {
	e := api.AsError(err)
	b, _ := json.Marshal(failureAnswer{Error: e.Error(), Kind: e.Kind, Hint: e.Hint, Retryable: e.Retryable})
	if partial == nil {
		return b
	}
	more, merr := json.Marshal(partial)
	if merr != nil || len(more) <= 2 || more[0] != '{' {
		return b
	}
	out := append(b[:len(b)-1:len(b)-1], ',')
	return append(out, more[1:]...)
}
