package compatsvc

import "github.com/trycua/cua-spacesd/capabilities/desktop"

// parseKey is the desktop's parse of a key name, for the key name test.
func parseKey(name string) error {
	_, err := desktop.ParseKeyCombo(name)
	return err
}
