package filesvc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// handleRead serves part or all of a file. The part comes from the offset
// and length query parameters or from one HTTP Range (206 + Content-Range);
// not both. A part starting at or past the end answers 416 with kind
// invalid_argument. Range is parsed here rather than by http.ServeContent so
// that every failure travels in our error envelope.
func (s *Service) handleRead(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseFileReadQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	path, byQuery, win := q.Path, q.Part, files.Window{Offset: q.Offset, Length: q.Length}
	if !byQuery {
		win.Length = -1 // the whole file
	}
	rangeHdr := r.Header.Get("Range")
	if byQuery && rangeHdr != "" {
		httpapi.WriteError(w, api.Errorf(api.KindInvalidArgument, "read %s: give offset/length or a Range header, not both", path))
		return
	}
	f, err := files.Open(r.Context(), path)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	defer f.Close()
	size := f.Size
	byRange := false
	if rangeHdr != "" && size > 0 {
		// An empty file has no satisfiable range; its whole (empty)
		// content is the answer, as RFC 9110 lets a server ignore Range.
		if win, byRange, err = files.ParseRange(path, rangeHdr, size); err != nil {
			httpapi.WriteError(w, err)
			return
		}
	}
	off, n, err := win.Resolve(path, size)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Accept-Ranges", "bytes")
	h.Set(api.HeaderFileSize, strconv.FormatInt(size, 10))
	// A whole-file answer carries the sha256 of the bytes sent as a trailer,
	// hashed while they go out: the client verifies a download in one pass,
	// with no second read of the file. Trailers need chunked encoding, so
	// such an answer has no Content-Length (X-Cua-File-Size says the size).
	wholeFile := !byQuery && !byRange && r.Method != http.MethodHead
	if wholeFile {
		h.Set("Trailer", api.HeaderSHA256)
	} else {
		h.Set("Content-Length", strconv.FormatInt(n, 10))
	}
	status := http.StatusOK
	if byRange {
		status = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, size))
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead || n == 0 {
		return
	}
	iw := httpapi.WriteIdle(w)
	defer iw.Clear()
	var out io.Writer = &httpapi.CountingWriter{W: iw, Count: s.bytesOut.Add}
	sum := sha256.New()
	if wholeFile {
		out = io.MultiWriter(out, sum)
	}
	buf := make([]byte, min(n, files.CopyBufferBytes))
	// The status is sent: a failure now can only cut the body short, which
	// the client sees as fewer bytes than the size, and no trailer.
	if _, err := io.CopyBuffer(out, io.NewSectionReader(f, off, n), buf); err == nil && wholeFile {
		h.Set(api.HeaderSHA256, hex.EncodeToString(sum.Sum(nil)))
	}
}

// handleWrite replaces a file atomically with the request body.
func (s *Service) handleWrite(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseFileWriteQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	opt := files.WriteOptions{Counter: s.countIn(), Journal: s.journal}
	if q.Mode != "" {
		m, err := files.ParseMode(api.QueryMode, q.Mode, files.DefaultFileMode)
		if err != nil {
			httpapi.WriteError(w, err)
			return
		}
		opt.Mode = (*fs.FileMode)(&m)
	}
	body := httpapi.ReadIdle(w, r.Body)
	defer body.Done()
	res, err := files.WriteAtomic(q.Path, body, opt)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	w.Header().Set(api.HeaderSHA256, res.SHA256)
	httpapi.WriteJSON(w, http.StatusOK, res)
}
