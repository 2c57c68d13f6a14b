package mcpserve

import (
	"bytes"
	"encoding/json"
	"strings"
)

// isResponse reports whether msg, a JSON-RPC message the SDK writes, is a
// response: it has an id and a result or an error, and no method. It reads
// the top-level keys only and steps over their values without decoding
// them: a screenshot's answer is a few hundred KB of base64, which
// json.Unmarshal took over a millisecond to scan and copy, on every answer.
// For valid JSON it answers as decoding into envelope would (keys matched
// as encoding/json matches them, the last of a repeated method winning);
// for anything else it answers false or a guess, never panics.
func isResponse(msg []byte) bool {
	var hasID, hasResult, hasMethod bool
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return false
	}
	i = skipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return false
	}
	for {
		if i >= len(msg) || msg[i] != '"' {
			return false
		}
		end := skipString(msg, i)
		if end < 0 {
			return false
		}
		key := msg[i:end]
		i = skipSpace(msg, end)
		if i >= len(msg) || msg[i] != ':' {
			return false
		}
		i = skipSpace(msg, i+1)
		vend := skipValue(msg, i)
		if vend < 0 {
			return false
		}
		switch name := keyName(key); {
		case strings.EqualFold(name, "id"):
			hasID = true
		case strings.EqualFold(name, "result"), strings.EqualFold(name, "error"):
			hasResult = true
		case strings.EqualFold(name, "method"):
			// A string, or null (left ""); anything else fails the decode.
			var m *string
			if json.Unmarshal(msg[i:vend], &m) != nil {
				return false
			}
			hasMethod = m != nil && *m != ""
		}
		i = skipSpace(msg, vend)
		if i < len(msg) && msg[i] == ',' {
			i = skipSpace(msg, i+1)
			continue
		}
		if i >= len(msg) || msg[i] != '}' || skipSpace(msg, i+1) != len(msg) {
			return false
		}
		return hasID && hasResult && !hasMethod
	}
}

// keyName is a key as encoding/json matches it: unescaped.
func keyName(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1])
	}
	var s string
	_ = json.Unmarshal(quoted, &s)
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] (a
// quote), or -1 if it does not end. The closing quote is found with
// IndexByte, so a long string costs little.
func skipString(b []byte, i int) int {
	for j := i + 1; ; {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := j - 1; k > i && b[k] == '\\'; k-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// skipValue returns the index just past the value starting at b[i], or
// -1. Objects and arrays are matched bracket by bracket, strings skipped
// whole; numbers and literals end at the next delimiter, unchecked.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	j := i
	for ; j < len(b); j++ {
		if c := b[j]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
	}
	if j == i {
		return -1
	}
	return j
}
