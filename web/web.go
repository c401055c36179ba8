// Package web holds the browser assets the server embeds and serves as
// they are committed: no build step, no third-party code. internal/widget
// serves them.
package web

import "embed"

// Widget is web/widget: the web widget's scripts, its AudioWorklet module
// and its demo page (not its node tests).
//
//go:embed widget/widget.js widget/widget.mjs widget/audio-worklet.mjs widget/demo.html widget/demo.js widget/demo.css
var Widget embed.FS
