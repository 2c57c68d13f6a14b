package transfer

import (
	"context"
	"crypto/sha256"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// maxHashOutput bounds what the Space's sha256 command may print.
const maxHashOutput = 4 << 10

// remoteSHA256 asks the Space for a file's sha256 with the tool it has
// (sha256sum on Linux, shasum on macOS); "" when it has neither, or no
// shell. The path is an argument, never part of a command line.
func (s *Session) remoteSHA256(ctx context.Context, p string) (string, error) {
	if s.Caps == nil {
		return "", nil
	}
	if ok, _ := s.Caps.Supports(api.FeatureShell); !ok {
		return "", nil
	}
	for _, argv := range [][]string{{"sha256sum", "--", p}, {"shasum", "-a", "256", "--", p}} {
		res, err := s.Client.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: argv}, MaxOutputBytes: maxHashOutput})
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			continue
		}
		if res.ExitCode != 0 {
			continue
		}
		fields := strings.Fields(res.Stdout)
		if len(fields) == 0 {
			continue
		}
		// sha256sum escapes odd names with a leading backslash on the line.
		sum := strings.TrimPrefix(fields[0], `\`)
		if len(sum) == sha256.Size*2 {
			return sum, nil
		}
	}
	return "", nil
}
