package desktopsvc

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// screenshot captures the screen or one window: the image is the body, its
// description (size, scale, bounds) the X-Cua-Screenshot header.
func (s *Service) screenshot(w http.ResponseWriter, r *http.Request) {
	id, err := httpapi.QueryInt(r, "window_id", 0, 0, 1<<32-1)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	quality, err := httpapi.QueryInt(r, "quality", 0, 1, 100)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	maxDim, err := httpapi.QueryInt(r, "max_dimension", 0, 0, desktop.MaxDimensionLimit)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	img, info, err := s.d.Screenshot(r.Context(), api.ScreenshotRequest{
		WindowID: uint32(id), Format: r.URL.Query().Get("format"), Quality: int(quality), MaxDimension: int(maxDim),
	})
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	meta, _ := json.Marshal(info)
	w.Header().Set(api.ScreenshotInfoHeader, string(meta))
	w.Header().Set("Content-Type", "image/"+info.Format)
	w.Header().Set("Content-Length", strconv.Itoa(len(img)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(img)
}
