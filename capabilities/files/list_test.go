package files_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/files"
)

// A listing of a huge directory stops reading at the cap: the entries it
// answers are the first ones in the directory's own order (what a reader
// that stops early sees), not the first by name (what reading every name
// and sorting gives). Seen before: every name was read, then cut.
func TestListOfAHugeDirectoryStopsAtTheCap(t *testing.T) {
	dir := smallTmpfs(t, "64m")
	const n = 30_000
	// Created in a shuffled order, so that no directory order (creation
	// or its reverse, or a hash) matches the order by name.
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for _, i := range order {
		name := fmt.Sprintf("f%05d", i)
		if i%10 == 0 {
			name = "." + name // hidden ones do not count
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// What a reader that stops at the cap sees, in the directory's order.
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for len(want) < files.MaxListEntries {
		names, err := d.Readdirnames(512)
		for _, nm := range names {
			if !strings.HasPrefix(nm, ".") && len(want) < files.MaxListEntries {
				want = append(want, nm)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	slices.Sort(want)

	res, err := files.List(t.Context(), dir, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Entries) != files.MaxListEntries {
		t.Fatalf("truncated=%v entries=%d; want true, %d", res.Truncated, len(res.Entries), files.MaxListEntries)
	}
	got := names(res, dir)
	if !slices.IsSorted(got) {
		t.Error("entries are not sorted by name")
	}
	if !slices.Equal(got, want) {
		byName := make([]string, 0, files.MaxListEntries)
		for i := 0; len(byName) < files.MaxListEntries; i++ {
			if i%10 != 0 {
				byName = append(byName, fmt.Sprintf("f%05d", i))
			}
		}
		t.Fatalf("the listing is not the first %d entries in directory order (got %s..%s; every name read and sorted would be %s..%s: equal=%v)",
			files.MaxListEntries, got[0], got[len(got)-1], byName[0], byName[len(byName)-1], slices.Equal(got, byName))
	}
}
