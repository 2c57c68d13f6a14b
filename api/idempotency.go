package api

import "time"

// Idempotency keys (Idempotency-Key, as the IETF draft of that name and the
// Arete convention): a client sends one with a mutating call, and sends the
// same one again when it retries after the link dropped, so that a call that
// did run is answered, not run twice.
const (
	// HeaderIdempotencyKey carries the key: 1 to MaxIdempotencyKeyLength
	// visible ASCII characters, chosen by the caller (a random UUID does).
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderIdempotencyReplayed is "true" on an answer that repeats the
	// answer of an earlier call with the same key (its JSON object also
	// says "replayed": true; a bulk answer only has the header).
	HeaderIdempotencyReplayed = "Idempotency-Replayed"
	// MaxIdempotencyKeyLength bounds a key.
	MaxIdempotencyKeyLength = 255
	// IdempotencyKeyTTL is how long the daemon keeps a key after its call
	// ended. A restart of the daemon forgets every key.
	IdempotencyKeyTTL = 10 * time.Minute
	// MaxIdempotencyKeys bounds the keys kept at once; past it the oldest
	// finished one is forgotten first.
	MaxIdempotencyKeys = 10000
	// MaxIdempotentAnswerBytes bounds an answer kept for a repeat; a
	// longer one is not kept, and a repeat of its key answers
	// precondition_failed instead of running the call again.
	MaxIdempotentAnswerBytes = 8 << 20
	// MaxIdempotentAnswersBytes bounds the answers kept in all: past it
	// the oldest finished keys are forgotten first, so that keys cost the
	// daemon a bounded amount of memory whatever the answers' sizes.
	MaxIdempotentAnswersBytes = 64 << 20
	// IdempotentOrphanGrace is how long a keyed call whose client left
	// runs on, waiting for a retry with its key to adopt it; without one
	// it is cancelled, as a call without a key is at once (an MCP
	// cancellation then still ends the command). An adopted call runs to
	// its end. api/client retries within 0.3 s.
	IdempotentOrphanGrace = 3 * time.Second
)

// ReasonIdempotencyKeyReused is the reason of an invalid_argument answered
// to a key used before on a different request.
const ReasonIdempotencyKeyReused = "idempotency_key_reused"

// ValidIdempotencyKey reports whether k may be used as a key.
func ValidIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKeyLength {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}
