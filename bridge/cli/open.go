package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// openerWait is how long view --open waits for its opener: xdg-open and
// open hand the URL over and exit at once, and a failure shows then; a
// browser named in $BROWSER runs on, and is left running.
const openerWait = 5 * time.Second

// openers are the commands that open url in the user's browser, in the
// order tried: those of $BROWSER (a colon-separated list, where %s stands
// for the URL, else it comes last), then the system's own.
func openers(getenv func(string) string, url string) [][]string {
	var out [][]string
	for _, c := range strings.Split(getenv("BROWSER"), ":") {
		argv := strings.Fields(c)
		if len(argv) == 0 {
			continue
		}
		placed := false
		for i, a := range argv {
			if strings.Contains(a, "%s") {
				argv[i] = strings.ReplaceAll(a, "%s", url)
				placed = true
			}
		}
		if !placed {
			argv = append(argv, url)
		}
		out = append(out, argv)
	}
	switch runtime.GOOS {
	case "darwin":
		out = append(out, []string{"open", url})
	case "windows":
		out = append(out, []string{"rundll32", "url.dll,FileProtocolHandler", url})
	default:
		out = append(out, []string{"xdg-open", url})
	}
	return out
}

// openURL opens url with the first opener that is installed, and answers
// its name. An opener that exits with an error within openerWait fails
// the open. Its messages go to stderr, the command's own, as when a
// person runs it: a browser's too, for as long as it runs.
func openURL(ctx context.Context, getenv func(string) string, stderr io.Writer, url string) (string, error) {
	var tried []string
	for _, argv := range openers(getenv, url) {
		if _, err := exec.LookPath(argv[0]); err != nil {
			tried = append(tried, argv[0])
			continue
		}
		// Not tied to ctx: the browser outlives this command.
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = stderr
		cmd.SysProcAttr = detached()
		if err := cmd.Start(); err != nil {
			return argv[0], err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				return argv[0], fmt.Errorf("%s failed (%v)", argv[0], err)
			}
			return argv[0], nil
		case <-time.After(openerWait):
			// Still running: a browser itself, which now has the URL.
			return argv[0], nil
		case <-ctx.Done():
			return argv[0], ctx.Err()
		}
	}
	return "", errors.New("no browser to open it with (tried " + strings.Join(tried, ", ") + "): set $BROWSER, or install xdg-utils")
}

// getenv is os.Getenv unless the Env says otherwise.
func (env Env) getenv(key string) string {
	if env.Getenv != nil {
		return env.Getenv(key)
	}
	return os.Getenv(key)
}
