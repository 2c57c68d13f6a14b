// Package browser tests the built-in viewer page (media/viewer) in a real
// browser: Debian's headless Chromium, driven by chromedp over the
// DevTools protocol through a pipe (no debugging port), against a real
// daemon on Xvfb, all inside a network namespace whose only interface is
// lo. It holds only tests and benchmarks (make bench runs the latter).
package browser
