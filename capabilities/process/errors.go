package process

import "errors"

var errRingClosed = errors.New("output ring closed")
