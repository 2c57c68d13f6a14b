package yuv

import "image"

// Accelerated says Convert runs the vector loop here.
var Accelerated = accelerated

// ConvertPortable is Convert with the pure Go loop, the reference of the
// vector one.
func ConvertPortable(dst *Image, src BGRX, rects []image.Rectangle) error {
	return convert(dst, src, rects, convertRect)
}
