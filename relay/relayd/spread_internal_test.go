package relayd

import (
	"fmt"
	"slices"
	"testing"
)

// Each computer gets every URL of the cluster, in the list's own order
// turned to start at a node of its own, and the computers spread over the
// nodes.
func TestSpreadURLs(t *testing.T) {
	urls := []string{"wss://a", "wss://b", "wss://c"}
	first := map[string]int{}
	for i := range 300 {
		name := fmt.Sprintf("box-%d", i)
		got := spreadURLs(urls, name)
		if !slices.Equal(got, spreadURLs(urls, name)) {
			t.Fatalf("%s: not the same list twice", name)
		}
		k := slices.Index(urls, got[0])
		if want := append(slices.Clone(urls[k:]), urls[:k]...); !slices.Equal(got, want) {
			t.Fatalf("%s: %v is not the list turned", name, got)
		}
		first[got[0]]++
	}
	for _, u := range urls {
		if first[u] < 50 {
			t.Errorf("%s first for %d of 300 computers: %v", u, first[u], first)
		}
	}
	if got := spreadURLs(urls[:1], "x"); !slices.Equal(got, urls[:1]) {
		t.Errorf("one URL: %v", got)
	}
	if !slices.Equal(urls, []string{"wss://a", "wss://b", "wss://c"}) {
		t.Errorf("the node's own list changed: %v", urls)
	}
}
