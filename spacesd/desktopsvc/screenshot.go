package desktopsvc

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// screenshot captures the screen or one window: the image is the body, its
// description (size, scale, bounds) the X-Cua-Screenshot header.
func (s *Service) screenshot(w http.ResponseWriter, r *http.Request) {
	req, err := api.ParseScreenshotQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	img, info, err := s.d.Screenshot(r.Context(), req)
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
