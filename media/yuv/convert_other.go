//go:build !(cgo && amd64)

package yuv

import "image"

// accelerated: no vector loop in this build (see convert_cgo_amd64.go).
const accelerated = false

func convertRectAccel(dst *Image, src BGRX, r image.Rectangle) { convertRect(dst, src, r) }
