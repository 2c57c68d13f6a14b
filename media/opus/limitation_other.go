//go:build !linux

package opus

// Limitation is what this build's streams answer without the encoder.
const Limitation = LimitationOther
