package client

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

// An image answer is read whole or refused: never cut at the limit and
// handed on as if whole, with or without a Content-Length.
func TestReadImage(t *testing.T) {
	const limit = 10
	for _, tc := range []struct {
		name   string
		body   string
		length int64 // -1: unknown (chunked)
		want   string
		kind   api.Kind // "" = no error; "io" = a read error
	}{
		{"sized", "0123456789", 10, "0123456789", ""},
		{"unsized", "0123456789", -1, "0123456789", ""},
		{"empty", "", 0, "", ""},
		{"sized over the limit", "0123456789a", 11, "", api.KindLimitExceeded},
		{"unsized over the limit", "0123456789a", -1, "", api.KindLimitExceeded},
		{"shorter than its length", "01234", 10, "", "io"},
	} {
		resp := &http.Response{Body: io.NopCloser(strings.NewReader(tc.body)), ContentLength: tc.length}
		got, err := readImage(resp, limit)
		switch {
		case tc.kind == "" && (err != nil || string(got) != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		case tc.kind == "io" && !errors.Is(err, io.ErrUnexpectedEOF):
			t.Errorf("%s: %q, %v; want an unexpected EOF", tc.name, got, err)
		case tc.kind != "" && tc.kind != "io" && api.KindOf(err) != tc.kind:
			t.Errorf("%s: %q, %v; want kind %s", tc.name, got, err, tc.kind)
		}
	}
}
