// Package netns opens a listening socket inside another network
// namespace, so that a process can serve in a namespace whose only
// interface is lo while it connects out from its own: how airlock proxy
// becomes the only way out of a container placed in that namespace
// (docs/export.md).
package netns
