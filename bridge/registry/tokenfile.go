package registry

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// MaxTokenFileBytes bounds the read of a token file, as cua-spacesd bounds
// its own: a token is one short line, and a path mistyped to a huge file
// must not be read whole.
const MaxTokenFileBytes = 64 << 10

// ReadTokenFile reads a file holding one bearer token as cua-spacesd reads
// its --token-file: the first line, trimmed. A file that holds more (a
// second non-empty line, or JSON such as this registry's tokens.json, which
// holds every Space's token) is refused with kind invalid_argument rather
// than sent whole as one Bearer value, to whichever server receives it. A
// missing file is kind not_found, another read failure kind io.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		kind := api.KindIO
		if errors.Is(err, fs.ErrNotExist) {
			kind = api.KindNotFound
		}
		return "", api.Errorf(kind, "token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTokenFileBytes))
	if err != nil {
		return "", api.Errorf(api.KindIO, "token file %s: %w", path, err)
	}
	lines := strings.Split(string(b), "\n")
	tok := strings.TrimSpace(lines[0])
	if strings.HasPrefix(tok, "{") || strings.HasPrefix(tok, "[") {
		return "", api.Errorf(api.KindInvalidArgument, "token file %s holds JSON (%s holds every Space's token), not one token", path, TokensFile).
			WithHint("give a file whose first and only line is the token, such as serve's bridge.token")
	}
	n := 0
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return "", api.Errorf(api.KindInvalidArgument, "token file %s holds %d non-empty lines, not one token", path, n).
			WithHint("give a file whose only line is the token")
	case n == 0:
		return "", api.Errorf(api.KindInvalidArgument, "token file %s is empty", path).
			WithHint("write the token on the file's first line")
	case tok == "":
		return "", api.Errorf(api.KindInvalidArgument, "token file %s: its first line is empty, and the token must be there", path).
			WithHint("write the token on the file's first line")
	}
	return tok, nil
}
