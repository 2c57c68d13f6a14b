package pulse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A tagstruct is the body of every command packet: a sequence of values,
// each a one-byte tag naming its type followed by the value, integers big
// endian. These are the tags of the types this package reads or writes.
const (
	tagString     = 't'
	tagStringNull = 'N'
	tagU32        = 'L'
	tagU8         = 'B'
	tagU64        = 'R'
	tagS64        = 'r'
	tagSampleSpec = 'a'
	tagArbitrary  = 'x'
	tagTrue       = '1'
	tagFalse      = '0'
	tagTimeval    = 'T'
	tagUsec       = 'U'
	tagChannelMap = 'm'
	tagCVolume    = 'v'
	tagPropList   = 'P'
	tagVolume     = 'V'
	tagFormatInfo = 'f'
)

const (
	// maxChannels is the server's own bound on channels in a sample spec,
	// a channel map or a volume (PA_CHANNELS_MAX).
	maxChannels = 32
	// maxProps bounds the entries of one property list a reply may carry:
	// a list is read into memory, and a server that sends more is broken.
	maxProps = 1024
)

// errShort is a tagstruct that ends inside a value.
var errShort = errors.New("tagstruct ends inside a value")

// SampleSpec is a stream's sample format, rate and channel count.
type SampleSpec struct {
	Format   uint8
	Channels uint8
	Rate     uint32
}

// Sample formats (pa_sample_format_t) this package names.
const (
	FormatS16LE uint8 = 3
)

// Channel positions (pa_channel_position_t) this package names.
const (
	ChannelMono       uint8 = 0
	ChannelFrontLeft  uint8 = 1
	ChannelFrontRight uint8 = 2
)

// VolumeNorm is 100 % (PA_VOLUME_NORM).
const VolumeNorm uint32 = 0x10000

// Prop is one entry of a property list. Values are bytes: a string value
// carries its terminating NUL, as the server stores it.
type Prop struct {
	Key   string
	Value []byte
}

// StringProp is a property whose value is the string s.
func StringProp(key, s string) Prop { return Prop{Key: key, Value: append([]byte(s), 0)} }

// tagWriter builds a tagstruct.
type tagWriter struct{ b []byte }

func (w *tagWriter) u32(v uint32) {
	w.b = append(w.b, tagU32)
	w.b = binary.BigEndian.AppendUint32(w.b, v)
}

func (w *tagWriter) u8(v uint8) { w.b = append(w.b, tagU8, v) }

func (w *tagWriter) u64(v uint64) {
	w.b = append(w.b, tagU64)
	w.b = binary.BigEndian.AppendUint64(w.b, v)
}

func (w *tagWriter) s64(v int64) {
	w.b = append(w.b, tagS64)
	w.b = binary.BigEndian.AppendUint64(w.b, uint64(v))
}

func (w *tagWriter) usec(d time.Duration) {
	w.b = append(w.b, tagUsec)
	w.b = binary.BigEndian.AppendUint64(w.b, uint64(d/time.Microsecond))
}

// str writes s; callers check that s holds no NUL (checkString), which
// would end it early on the other side.
func (w *tagWriter) str(s string) {
	w.b = append(w.b, tagString)
	w.b = append(w.b, s...)
	w.b = append(w.b, 0)
}

// nullStr writes the null string, which a request uses for "none".
func (w *tagWriter) nullStr() { w.b = append(w.b, tagStringNull) }

func (w *tagWriter) boolean(v bool) {
	if v {
		w.b = append(w.b, tagTrue)
	} else {
		w.b = append(w.b, tagFalse)
	}
}

func (w *tagWriter) arbitrary(p []byte) {
	w.b = append(w.b, tagArbitrary)
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(len(p)))
	w.b = append(w.b, p...)
}

func (w *tagWriter) sampleSpec(s SampleSpec) {
	w.b = append(w.b, tagSampleSpec, s.Format, s.Channels)
	w.b = binary.BigEndian.AppendUint32(w.b, s.Rate)
}

func (w *tagWriter) channelMap(m []uint8) {
	w.b = append(w.b, tagChannelMap, uint8(len(m)))
	w.b = append(w.b, m...)
}

func (w *tagWriter) cvolume(v []uint32) {
	w.b = append(w.b, tagCVolume, uint8(len(v)))
	for _, x := range v {
		w.b = binary.BigEndian.AppendUint32(w.b, x)
	}
}

func (w *tagWriter) timeval(t time.Time) {
	w.b = append(w.b, tagTimeval)
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(t.Unix()))
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(t.Nanosecond()/1000))
}

func (w *tagWriter) proplist(props []Prop) {
	w.b = append(w.b, tagPropList)
	for _, p := range props {
		w.str(p.Key)
		w.u32(uint32(len(p.Value)))
		w.arbitrary(p.Value)
	}
	w.nullStr()
}

// checkString answers an error for a string a tagstruct cannot carry.
func checkString(what, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s %q holds a NUL byte", what, s)
	}
	return nil
}

// tagReader reads a tagstruct. The first error sticks: every later read
// answers a zero value, so a parser reads straight down and checks err
// once at the end.
type tagReader struct {
	b   []byte
	err error
}

func (r *tagReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// tag consumes the next tag byte, which must be want.
func (r *tagReader) tag(want byte) bool {
	if r.err != nil {
		return false
	}
	if len(r.b) == 0 {
		r.fail(errShort)
		return false
	}
	if r.b[0] != want {
		r.fail(fmt.Errorf("tagstruct: want a value of tag %q, got %q", want, r.b[0]))
		return false
	}
	r.b = r.b[1:]
	return true
}

// raw consumes n bytes after a tag.
func (r *tagReader) raw(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.fail(errShort)
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *tagReader) rawU32() uint32 {
	if p := r.raw(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *tagReader) rawU64() uint64 {
	if p := r.raw(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (r *tagReader) rawU8() uint8 {
	if p := r.raw(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *tagReader) u32() uint32 {
	if !r.tag(tagU32) {
		return 0
	}
	return r.rawU32()
}

func (r *tagReader) u8() uint8 {
	if !r.tag(tagU8) {
		return 0
	}
	return r.rawU8()
}

func (r *tagReader) u64() uint64 {
	if !r.tag(tagU64) {
		return 0
	}
	return r.rawU64()
}

func (r *tagReader) s64() int64 {
	if !r.tag(tagS64) {
		return 0
	}
	return int64(r.rawU64())
}

func (r *tagReader) volume() uint32 {
	if !r.tag(tagVolume) {
		return 0
	}
	return r.rawU32()
}

// maxUsec is the largest duration in whole microseconds.
const maxUsec = (1<<63 - 1) / time.Microsecond

// usec reads a duration in microseconds, saturating at maxUsec (the
// server sends (uint64)-1 for "unknown").
func (r *tagReader) usec() time.Duration {
	if !r.tag(tagUsec) {
		return 0
	}
	us := r.rawU64()
	if us > uint64(maxUsec) {
		return maxUsec * time.Microsecond
	}
	return time.Duration(us) * time.Microsecond
}

// str reads a string or the null string; null says which.
func (r *tagReader) str() (s string, null bool) {
	if r.err != nil {
		return "", false
	}
	if len(r.b) > 0 && r.b[0] == tagStringNull {
		r.b = r.b[1:]
		return "", true
	}
	if !r.tag(tagString) {
		return "", false
	}
	end := -1
	for i, c := range r.b {
		if c == 0 {
			end = i
			break
		}
	}
	if end < 0 {
		r.fail(errors.New("tagstruct: a string has no terminating NUL"))
		return "", false
	}
	s = string(r.b[:end])
	r.b = r.b[end+1:]
	return s, false
}

// string reads a string, the null string answering "".
func (r *tagReader) string() string {
	s, _ := r.str()
	return s
}

func (r *tagReader) boolean() bool {
	if r.err != nil {
		return false
	}
	if len(r.b) == 0 {
		r.fail(errShort)
		return false
	}
	switch r.b[0] {
	case tagTrue:
		r.b = r.b[1:]
		return true
	case tagFalse:
		r.b = r.b[1:]
		return false
	}
	r.fail(fmt.Errorf("tagstruct: want a boolean, got tag %q", r.b[0]))
	return false
}

func (r *tagReader) arbitrary() []byte {
	if !r.tag(tagArbitrary) {
		return nil
	}
	n := r.rawU32()
	if r.err == nil && uint64(n) > uint64(len(r.b)) {
		r.fail(errShort)
		return nil
	}
	return r.raw(int(n))
}

func (r *tagReader) sampleSpec() SampleSpec {
	if !r.tag(tagSampleSpec) {
		return SampleSpec{}
	}
	return SampleSpec{Format: r.rawU8(), Channels: r.rawU8(), Rate: r.rawU32()}
}

func (r *tagReader) channelMap() []uint8 {
	if !r.tag(tagChannelMap) {
		return nil
	}
	n := r.rawU8()
	if n > maxChannels {
		r.fail(fmt.Errorf("tagstruct: a channel map of %d channels (at most %d)", n, maxChannels))
		return nil
	}
	return append([]uint8(nil), r.raw(int(n))...)
}

func (r *tagReader) cvolume() []uint32 {
	if !r.tag(tagCVolume) {
		return nil
	}
	n := r.rawU8()
	if n > maxChannels {
		r.fail(fmt.Errorf("tagstruct: a volume of %d channels (at most %d)", n, maxChannels))
		return nil
	}
	v := make([]uint32, 0, n)
	for range n {
		v = append(v, r.rawU32())
	}
	if r.err != nil {
		return nil
	}
	return v
}

func (r *tagReader) timeval() time.Time {
	if !r.tag(tagTimeval) {
		return time.Time{}
	}
	sec, usec := r.rawU32(), r.rawU32()
	return time.Unix(int64(sec), int64(usec)*1000)
}

func (r *tagReader) proplist() []Prop {
	if !r.tag(tagPropList) {
		return nil
	}
	var props []Prop
	for r.err == nil {
		key, null := r.str()
		if null || r.err != nil {
			break
		}
		if len(props) == maxProps {
			r.fail(fmt.Errorf("tagstruct: a property list of more than %d entries", maxProps))
			break
		}
		n := r.u32()
		v := r.arbitrary()
		if r.err == nil && uint32(len(v)) != n {
			r.fail(fmt.Errorf("tagstruct: property %q says %d bytes and holds %d", key, n, len(v)))
		}
		props = append(props, Prop{Key: key, Value: append([]byte(nil), v...)})
	}
	if r.err != nil {
		return nil
	}
	return props
}

// formatInfo reads a stream format (encoding and properties); this package
// needs neither, only to read past it.
func (r *tagReader) formatInfo() {
	if r.tag(tagFormatInfo) {
		r.u8()
		r.proplist()
	}
}

// skip reads past one value of any type, so that a reader may ignore the
// fields a newer server adds at the end of a reply.
func (r *tagReader) skip() {
	if r.err != nil {
		return
	}
	if len(r.b) == 0 {
		r.fail(errShort)
		return
	}
	switch r.b[0] {
	case tagString, tagStringNull:
		r.str()
	case tagU32:
		r.u32()
	case tagU8:
		r.u8()
	case tagU64:
		r.u64()
	case tagS64:
		r.s64()
	case tagUsec:
		r.usec()
	case tagVolume:
		r.volume()
	case tagSampleSpec:
		r.sampleSpec()
	case tagArbitrary:
		r.arbitrary()
	case tagTrue, tagFalse:
		r.boolean()
	case tagTimeval:
		r.timeval()
	case tagChannelMap:
		r.channelMap()
	case tagCVolume:
		r.cvolume()
	case tagPropList:
		r.proplist()
	case tagFormatInfo:
		r.formatInfo()
	default:
		r.fail(fmt.Errorf("tagstruct: unknown tag %q", r.b[0]))
	}
}

// done reports the reader's error, if any.
func (r *tagReader) done(what string) error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	return nil
}
