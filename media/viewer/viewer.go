// Package viewer is the built-in viewer page of cua-spacesd: plain HTML,
// CSS and JavaScript modules embedded in the binary (no build step, nothing
// from a CDN), served at api.PathViewer. The page holds no data and needs
// no token: it opens with a stream ticket in its URL's fragment, which it
// sends only in the Authorization header of the WHEP routes, and shows the
// stream scaled to fit, sending input over the data channels.
package viewer

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

//go:embed static
var static embed.FS

// assetsMarker in index.html stands for the versioned directory of the
// page's files (see Handler).
const assetsMarker = "{{ASSETS}}"

// versionLen is how many hex digits of the files' hash name their version.
const versionLen = 16

// securityPolicy allows the page its own files and its own origin's
// routes, nothing else: no inline script or style, no frames, no forms,
// no other origin. WebRTC's media is outside CSP; the WHEP calls are
// connect-src 'self'.
const securityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; media-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Cache lifetimes: the page is revalidated on every load (a new daemon
// serves a new page at once), its files live under a path named by their
// hash, so a browser keeps them for good.
const (
	pageCacheControl  = "no-cache"
	assetCacheControl = "public, max-age=31536000, immutable"
)

// contentTypes of the page's files, by extension: fixed here rather than
// read from the system's MIME tables, which differ between machines.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler serves the page: PathViewer (and PathViewer + "index.html") is
// the page, PathViewer + "a/<version>/<file>" its files, <version> a hash
// of them all. Anything else is 404.
type Handler struct {
	version string
	page    file
	assets  map[string]file
}

// file is one served file.
type file struct {
	body  []byte
	ctype string
	etag  string
}

func newFile(name string, body []byte) file {
	sum := sha256.Sum256(body)
	ctype, ok := contentTypes[path.Ext(name)]
	if !ok {
		ctype = "application/octet-stream"
	}
	return file{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:versionLen/2]) + `"`}
}

// New reads the embedded files and names their version.
func New() *Handler {
	h := &Handler{assets: map[string]file{}}
	var page []byte
	sum := sha256.New()
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "static/")
		if name == "index.html" {
			page = b
			return nil
		}
		h.assets[name] = newFile(name, b)
		sum.Write([]byte(name + "\x00"))
		sum.Write(b)
		return nil
	})
	if err != nil || page == nil {
		// The files are compiled in: only a broken build lacks them.
		panic("viewer: the embedded page is missing: " + errString(err))
	}
	h.version = hex.EncodeToString(sum.Sum(nil))[:versionLen]
	h.page = newFile("index.html", bytes.ReplaceAll(page, []byte(assetsMarker), []byte("a/"+h.version)))
	return h
}

func errString(err error) string {
	if err == nil {
		return "no index.html"
	}
	return err.Error()
}

// Version names the page's files (the hash in their path).
func (h *Handler) Version() string { return h.version }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", securityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
	hdr.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "the viewer's files are read with GET", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, api.PathViewer)
	var f file
	switch {
	case name == "" || name == "index.html":
		f = h.page
		hdr.Set("Cache-Control", pageCacheControl)
	case strings.HasPrefix(name, "a/"+h.version+"/"):
		f = h.assets[strings.TrimPrefix(name, "a/"+h.version+"/")]
		hdr.Set("Cache-Control", assetCacheControl)
	}
	if f.body == nil {
		// A file of another version (a page from before a restart with a
		// new binary) is not served as this one's.
		hdr.Set("Cache-Control", "no-store")
		http.Error(w, "no such file of the viewer page", http.StatusNotFound)
		return
	}
	hdr.Set("Content-Type", f.ctype)
	hdr.Set("ETag", f.etag)
	// No modification time: the ETag alone answers revalidations (304).
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}
