package relayd

import (
	"fmt"
	"slices"
	"testing"
)

// Each computer gets every URL of the cluster, always in the same order;
// the computers spread over the nodes first, and those of one node spread
// over the others next (a dead node's computers do not all go to one).
func TestSpreadURLs(t *testing.T) {
	urls := []string{"wss://a", "wss://b", "wss://c"}
	first := map[string]int{}
	second := map[string]map[string]int{}
	for i := range 600 {
		name := fmt.Sprintf("box-%d", i)
		got := spreadURLs(urls, name)
		if !slices.Equal(got, spreadURLs(urls, name)) {
			t.Fatalf("%s: not the same order twice", name)
		}
		sorted := slices.Clone(got)
		slices.Sort(sorted)
		if !slices.Equal(sorted, urls) {
			t.Fatalf("%s: %v is not the cluster's URLs", name, got)
		}
		first[got[0]]++
		if second[got[0]] == nil {
			second[got[0]] = map[string]int{}
		}
		second[got[0]][got[1]]++
	}
	for _, u := range urls {
		if first[u] < 120 {
			t.Errorf("%s first for %d of 600 computers: %v", u, first[u], first)
		}
		for _, v := range urls {
			if v != u && second[u][v] < first[u]/4 {
				t.Errorf("of %d computers first on %s, %d go on to %s: %v", first[u], u, second[u][v], v, second[u])
			}
		}
	}
	if got := spreadURLs(urls[:1], "x"); !slices.Equal(got, urls[:1]) {
		t.Errorf("one URL: %v", got)
	}
	if !slices.Equal(urls, []string{"wss://a", "wss://b", "wss://c"}) {
		t.Errorf("the node's own list changed: %v", urls)
	}
}
