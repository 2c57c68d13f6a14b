package protocol

// SignGrantPayload signs payload as is, so tests reach the checks that
// stand behind a good signature.
var SignGrantPayload = signGrantPayload
