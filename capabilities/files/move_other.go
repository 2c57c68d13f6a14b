//go:build !linux

package files

// renameNoReplace renames unless to exists (check, then rename).
func renameNoReplace(from, to string) error { return renameCheckFirst(from, to) }
