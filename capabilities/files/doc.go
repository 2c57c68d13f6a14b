// Package files is the files capability of cua-spacesd: stat, list, mkdir,
// move, remove, ranged reads, atomic writes, resumable sha256-verified
// uploads and directory watches. It knows nothing of HTTP: spacesd/server
// adapts requests to it, and other programs may use it directly.
//
// Every function takes absolute paths (see CleanPath) and returns errors as
// *api.Error with a kind from the Spaces error list: invalid_argument,
// not_found, permission_denied, precondition_failed, io, transfer_failed.
package files
