package cli

// ParseLocation exposes parseLocation to the external tests and the fuzz target.
func ParseLocation(s string) (space, path string, err error) {
	l, err := parseLocation(s)
	return l.space, l.path, err
}
