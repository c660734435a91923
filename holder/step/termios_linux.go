package step

import "syscall"

// ioctlGetTermios reads a terminal's settings: terminal's test.
const ioctlGetTermios = syscall.TCGETS
