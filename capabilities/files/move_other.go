//go:build !linux

package files

// renameNoReplace renames unless to exists (check, then rename).
func renameNoReplace(fromDir *dir, from string, toDir *dir, to string) error {
	return renameCheckFirst(fromDir, from, toDir, to)
}
