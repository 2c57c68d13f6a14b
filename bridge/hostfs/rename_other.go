//go:build unix && !linux && !darwin

package hostfs

// renameNoReplace has no one-step form here: Dir.RenameNoReplace checks,
// then renames.
func renameNoReplace(int, string, string) error { return errNoReplaceUnsupported }
