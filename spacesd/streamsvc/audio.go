package streamsvc

import (
	"cmp"
	"context"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/rtc"
)

// audioFeature is desktop_audio: the streams, Opus in this build, and a
// sound server with a default sink to capture.
func (s *Service) audioFeature(ctx context.Context) api.FeatureStatus {
	switch {
	case s.limitation != "":
		return api.FeatureStatus{Limitation: s.limitation}
	case !opus.Available:
		return api.FeatureStatus{Limitation: opus.Limitation}
	}
	// Probe bounds itself (audio.ProbeTimeout).
	if err := audio.Probe(ctx, s.audio); err != nil {
		e := api.AsError(err)
		return api.FeatureStatus{Limitation: cmp.Or(e.Limitation, e.Message)}
	}
	return api.FeatureStatus{Supported: true}
}

// openAudio opens the capture of the desktop's sound for the engine (its
// first listener).
func (s *Service) openAudio() (rtc.AudioSource, error) {
	return audio.Open(s.base, s.audio)
}
