package mcpconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// rootList is the repeatable --root flag.
type rootList []string

func (r *rootList) String() string     { return fmt.Sprint(*r) }
func (r *rootList) Set(v string) error { *r = append(*r, v); return nil }

// absRoots makes the roots absolute; none means the working directory.
func absRoots(roots []string) ([]string, error) {
	if len(roots) == 0 {
		roots = []string{"."}
	}
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, api.Errorf(api.KindEnv, "--root %s: %w", r, err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// rootsNote says which folders the stdio config lets the upload and download
// tools use, and how to choose others: the default (the directory
// mcp-config ran in) is easy to take for granted. userHome ("" when
// unknown) is the home directory a root is warned about when it holds it.
func rootsNote(roots []string, defaulted bool, userHome string) string {
	var b strings.Builder
	list := strings.Join(roots, ", ")
	if defaulted {
		fmt.Fprintf(&b, "The upload and download tools may use %s and nothing outside it: the directory mcp-config ran in, as no --root was given.\n", list)
		b.WriteString("To choose the folders, run mcp-config again with --root DIR (repeatable), or edit the --root arguments in the config.\n")
	} else {
		fmt.Fprintf(&b, "The upload and download tools may use %s (--root) and nothing outside.\n", list)
	}
	for _, r := range roots {
		if w := broadRootWarning(r, userHome); w != "" {
			b.WriteString(w)
		}
	}
	return b.String()
}

// broadRootWarning warns of a root that is the whole file system or holds
// the user's home directory: an agent could then send any of the user's
// files to a Space (upload) and write over them (download), keys and
// shell profiles included; only $CUA_HOME stays out of reach.
func broadRootWarning(root, userHome string) string {
	const risk = ": an agent could send any file there to a Space (upload) and write over it (download); only $CUA_HOME is kept out. " +
		"Give a narrower folder, e.g. --root ~/work.\n"
	root = resolve(root)
	if userHome == "" {
		if root == string(filepath.Separator) {
			return "Warning: the root " + root + " is the whole file system" + risk
		}
		return ""
	}
	home := resolve(userHome)
	rel, err := filepath.Rel(root, home)
	switch {
	case err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		return ""
	case rel == ".":
		return "Warning: the root " + root + " is your home directory" + risk
	case root == string(filepath.Separator):
		return "Warning: the root " + root + " is the whole file system, your home directory with it" + risk
	default:
		return "Warning: the root " + root + " holds your home directory (" + home + ")" + risk
	}
}

// resolve is p cleaned, its symlinks resolved where it exists, so that a
// root and the home directory compare whatever path led to them.
func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// userHome is the home directory a root is warned about, "" when unknown.
func userHome() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}
