package a11y

import (
	"context"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// Find answers the elements of a window that match q (every field set),
// at most api.MaxA11yFound, each with its path from the window. It costs
// one walk of the tree, hidden elements included.
func (a *A11y) Find(ctx context.Context, q api.A11yQuery) ([]api.A11yFound, error) {
	if q.Role == "" && q.Name == "" && q.NameContains == "" && q.ValueContains == "" && len(q.States) == 0 {
		return nil, api.Errorf(api.KindInvalidArgument, "find needs one of role, name, name_contains, value_contains, states")
	}
	w, err := a.walkWindow(ctx, api.A11yTreeRequest{WindowID: q.WindowID, MaxNodes: api.DefaultA11yMaxNodes})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]int, len(w.nodes))
	for i, n := range w.nodes {
		byID[n.ID] = i
	}
	found := []api.A11yFound{}
	for _, n := range w.nodes {
		if !matches(n, q) {
			continue
		}
		var path []string
		for p, ok := byID[n.Parent]; ok; p, ok = byID[w.nodes[p].Parent] {
			label := w.nodes[p].Name
			if label == "" {
				label = w.nodes[p].Role
			}
			path = append([]string{label}, path...)
		}
		found = append(found, api.A11yFound{Node: n, Path: path})
		if len(found) == api.MaxA11yFound {
			break
		}
	}
	return found, nil
}

// matches says whether node n answers query q.
func matches(n api.A11yNode, q api.A11yQuery) bool {
	if n.Error != nil {
		return false
	}
	if q.Role != "" && q.Role != n.Role && !strings.EqualFold(q.Role, n.RawRole) {
		return false
	}
	if q.Name != "" && q.Name != n.Name {
		return false
	}
	if q.NameContains != "" && !strings.Contains(strings.ToLower(n.Name), strings.ToLower(q.NameContains)) {
		return false
	}
	if q.ValueContains != "" && !strings.Contains(strings.ToLower(n.Value), strings.ToLower(q.ValueContains)) {
		return false
	}
	for _, s := range q.States {
		if !hasState(n.States, s) {
			return false
		}
	}
	return true
}
