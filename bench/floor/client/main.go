//go:build linux

// Command client is the floor under airlock session exec's client: a
// small Go program that connects to bench/floor -steps -serve's unix
// socket, asks for one step and exits with the status it answers (125 if
// it cannot). bench/session/run.sh times it as the floor-cli row. Plain
// system calls: no package of more than the runtime's start.
package main

import (
	"os"
	"syscall"
)

func main() {
	if len(os.Args) != 2 {
		os.Stderr.WriteString("usage: client SOCKET\n")
		os.Exit(125)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err == nil {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: os.Args[1]})
	}
	if err != nil {
		os.Stderr.WriteString("client: " + err.Error() + "\n")
		os.Exit(125)
	}
	var b [1]byte
	if _, err := syscall.Write(fd, []byte{1}); err != nil {
		os.Exit(125)
	}
	if n, _ := syscall.Read(fd, b[:]); n != 1 {
		os.Exit(125)
	}
	os.Exit(int(b[0]))
}
