package capped_test

import (
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/capped"
)

func TestKeepsTheFirstBytes(t *testing.T) {
	b := &capped.Buffer{Max: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "abcde" {
		t.Fatalf("kept %q, want abcde", got)
	}
	var zero capped.Buffer
	zero.Write([]byte(strings.Repeat("x", 10)))
	if zero.String() != "" {
		t.Fatalf("the zero buffer kept %q", zero.String())
	}
}
