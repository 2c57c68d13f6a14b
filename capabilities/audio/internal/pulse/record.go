package pulse

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// ServerInfo is the server's answer to GET_SERVER_INFO.
type ServerInfo struct {
	PackageName, PackageVersion string
	User, Host                  string
	Spec                        SampleSpec
	// DefaultSink and DefaultSource are names; "" when the server has
	// none (no sink loaded).
	DefaultSink, DefaultSource string
	Cookie                     uint32
	ChannelMap                 []uint8
}

// ServerInfo asks the server for its name, version and defaults.
func (c *Conn) ServerInfo(ctx context.Context) (ServerInfo, error) {
	var info ServerInfo
	err := c.request(ctx, cmdGetServerInfo, nil, func(r *tagReader) (err error) {
		info, err = parseServerInfo(r)
		return err
	})
	return info, err
}

func parseServerInfo(r *tagReader) (ServerInfo, error) {
	info := ServerInfo{
		PackageName:    r.string(),
		PackageVersion: r.string(),
		User:           r.string(),
		Host:           r.string(),
		Spec:           r.sampleSpec(),
		DefaultSink:    r.string(),
		DefaultSource:  r.string(),
		Cookie:         r.u32(),
		ChannelMap:     r.channelMap(),
	}
	// Later versions may add fields at the end: they are not read.
	return info, r.done("GET_SERVER_INFO reply")
}

// LookupSource answers the index of the source of that name: whether the
// server has it.
func (c *Conn) LookupSource(ctx context.Context, name string) (uint32, error) {
	if err := checkString("source name", name); err != nil {
		return 0, err
	}
	var index uint32
	err := c.request(ctx, cmdLookupSource, func(w *tagWriter) { w.str(name) }, func(r *tagReader) (err error) {
		index, err = parseU32Reply(r, "LOOKUP_SOURCE reply")
		return err
	})
	return index, err
}

// RecordOptions configure CreateRecordStream.
type RecordOptions struct {
	// Source is the name of the source to record ("" = the server's
	// default source; a sink's monitor is "<sink>.monitor").
	Source string
	// Spec and ChannelMap are the format the server converts to.
	Spec       SampleSpec
	ChannelMap []uint8
	// MaxLength is how many bytes the server keeps for a client that does
	// not read before it drops; FragSize the size of the blocks it sends.
	MaxLength, FragSize uint32
	// AdjustLatency has the server run the source itself at about the
	// fragment's latency, so that a block leaves as soon as it is full.
	AdjustLatency bool
	// Props name the stream (media.name, ...).
	Props []Prop

	// Data receives each block of audio, on the connection's read loop:
	// it must not block, nor keep p after it returns.
	Data func(p []byte)
	// Event receives the stream's notices (suspended, moved).
	Event func(StreamEvent)
	// End runs once, when the stream ends: the connection closed
	// (ErrClosed) or broke, or the server killed the stream
	// (ErrStreamKilled).
	End func(err error)
}

// StreamEvent is a notice about a record stream.
type StreamEvent struct {
	// Suspended says the source stopped (an idle sink is suspended: no
	// audio comes until it runs again) or, false, that it runs again.
	Suspended bool
	// Moved says the stream now records Source (someone moved it).
	Moved         bool
	Source        string
	SourceLatency time.Duration
}

// RecordStream is a stream recording a source, as the server set it up.
type RecordStream struct {
	c       *Conn
	channel uint32

	// Index is the stream's index on the server (its source output).
	Index      uint32
	Spec       SampleSpec
	ChannelMap []uint8
	// MaxLength and FragSize are the buffer sizes the server granted.
	MaxLength, FragSize uint32
	SourceIndex         uint32
	Source              string
	Suspended           bool
	// SourceLatency is the latency the server configured for the source.
	SourceLatency time.Duration

	data  func([]byte)
	event func(StreamEvent)
	onEnd func(error)
	ended sync.Once
}

func (s *RecordStream) end(err error) {
	s.ended.Do(func() {
		if s.onEnd != nil {
			s.onEnd(err)
		}
	})
}

// CreateRecordStream starts recording. The stream runs at once (it is not
// corked): blocks go to opts.Data from the first the source produces.
func (c *Conn) CreateRecordStream(ctx context.Context, opts RecordOptions) (*RecordStream, error) {
	if err := checkString("source name", opts.Source); err != nil {
		return nil, err
	}
	for _, p := range opts.Props {
		if err := checkString("property", p.Key); err != nil {
			return nil, err
		}
	}
	if opts.Spec.Channels == 0 || opts.Spec.Channels > maxChannels || len(opts.ChannelMap) != int(opts.Spec.Channels) {
		return nil, fmt.Errorf("record stream: a channel map of %d positions for %d channels", len(opts.ChannelMap), opts.Spec.Channels)
	}
	s := &RecordStream{c: c, data: opts.Data, event: opts.Event, onEnd: opts.End}
	volume := make([]uint32, opts.Spec.Channels)
	for i := range volume {
		volume[i] = VolumeNorm
	}
	args := func(w *tagWriter) {
		w.sampleSpec(opts.Spec)
		w.channelMap(opts.ChannelMap)
		w.u32(noIndex) // the source is named, not numbered
		if opts.Source == "" {
			w.nullStr()
		} else {
			w.str(opts.Source)
		}
		w.u32(opts.MaxLength)
		w.boolean(false) // corked
		w.u32(opts.FragSize)
		// Version 12: no_remap, no_remix, fix_format, fix_rate,
		// fix_channels, no_move, variable_rate. All false: the server
		// converts to our format, and may move the stream.
		for range 7 {
			w.boolean(false)
		}
		// 13: peak_detect, adjust_latency, properties, direct_on_input.
		w.boolean(false)
		w.boolean(opts.AdjustLatency)
		w.proplist(opts.Props)
		w.u32(noIndex)
		// 14: early_requests. 15: dont_inhibit_auto_suspend (false: a
		// stream recording a monitor keeps its sink from suspending, so
		// silence arrives as samples, not as a gap), fail_on_suspend.
		w.boolean(false)
		w.boolean(false)
		w.boolean(false)
		// 22: no formats beyond the sample spec; then the volume (unset,
		// as libpulse sends it: 100 % on each channel), muted, volume_set,
		// muted_set, relative_volume, passthrough.
		w.u8(0)
		w.cvolume(volume)
		for range 5 {
			w.boolean(false)
		}
	}
	err := c.request(ctx, cmdCreateRecordStream, args, func(r *tagReader) error {
		if err := parseRecordStreamReply(r, s); err != nil {
			return err
		}
		// On the read loop, before the next packet (the stream's first
		// block may be it) is read.
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil {
			return c.err
		}
		c.streams[s.channel] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func parseRecordStreamReply(r *tagReader, s *RecordStream) error {
	s.channel = r.u32()
	s.Index = r.u32()
	s.MaxLength = r.u32()
	s.FragSize = r.u32()
	s.Spec = r.sampleSpec()
	s.ChannelMap = r.channelMap()
	s.SourceIndex = r.u32()
	s.Source = r.string()
	s.Suspended = r.boolean()
	s.SourceLatency = r.usec()
	// Version 21 adds the stream's format, which says nothing the sample
	// spec does not: not read.
	return r.done("CREATE_RECORD_STREAM reply")
}

// RecordLatency is a stream's timing as the server reports it.
type RecordLatency struct {
	// Monitor is the latency of the sink whose monitor is recorded (how
	// long after the monitor sees a sample it is heard), 0 for a source
	// that monitors nothing.
	Monitor time.Duration
	// Source is how long a sample spends in the source (and its
	// resampler) before it is queued for us.
	Source time.Duration
	// Running says the source runs (not suspended).
	Running bool
	// Local is our clock when we asked; Remote the server's when it
	// answered.
	Local, Remote time.Time
	// WriteIndex and ReadIndex are the bytes queued for us, and sent, so
	// far: their difference is what waits in the server's queue.
	WriteIndex, ReadIndex int64
}

// Latency asks the server for the stream's latency.
func (s *RecordStream) Latency(ctx context.Context) (RecordLatency, error) {
	var l RecordLatency
	err := s.c.request(ctx, cmdGetRecordLatency, func(w *tagWriter) {
		w.u32(s.channel)
		w.timeval(time.Now())
	}, func(r *tagReader) (err error) {
		l, err = parseRecordLatency(r)
		return err
	})
	return l, err
}

func parseRecordLatency(r *tagReader) (RecordLatency, error) {
	l := RecordLatency{
		Monitor:    r.usec(),
		Source:     r.usec(),
		Running:    r.boolean(),
		Local:      r.timeval(),
		Remote:     r.timeval(),
		WriteIndex: r.s64(),
		ReadIndex:  r.s64(),
	}
	return l, r.done("GET_RECORD_LATENCY reply")
}
