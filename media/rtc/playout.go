package rtc

import (
	"github.com/pion/interceptor"
	"github.com/pion/rtp"
)

// PlayoutDelayURI names the playout-delay RTP header extension. Set to
// zero (min and max), it asks the receiver to render every frame as soon
// as it is decoded, without a jitter buffer's delay: on a LAN or loopback
// that is tens of milliseconds of glass-to-glass latency.
const PlayoutDelayURI = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"

// playoutDelayFactory makes the interceptor that stamps every outgoing
// video packet with a zero playout delay, when the viewer negotiated the
// extension.
type playoutDelayFactory struct{}

func (playoutDelayFactory) NewInterceptor(string) (interceptor.Interceptor, error) {
	return &playoutDelay{}, nil
}

type playoutDelay struct{ interceptor.NoOp }

func (*playoutDelay) BindLocalStream(info *interceptor.StreamInfo, writer interceptor.RTPWriter) interceptor.RTPWriter {
	id := 0
	for _, e := range info.RTPHeaderExtensions {
		if e.URI == PlayoutDelayURI {
			id = e.ID
		}
	}
	if id == 0 {
		return writer
	}
	zero, err := rtp.PlayoutDelayExtension{MinDelay: 0, MaxDelay: 0}.Marshal()
	if err != nil {
		return writer
	}
	return interceptor.RTPWriterFunc(func(h *rtp.Header, payload []byte, a interceptor.Attributes) (int, error) {
		if err := h.SetExtension(uint8(id), zero); err != nil {
			return 0, err
		}
		return writer.Write(h, payload, a)
	})
}
