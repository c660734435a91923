// Command gostart does nothing: its run is a small Go program's start and
// exit, the floor under any client process (bench/session/run.sh's
// go-start row).
package main

func main() {}
