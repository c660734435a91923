package initproc

import (
	"bufio"
	"os"
	"strconv"
)

// ReadLines returns the lines of a small file (a /proc or cgroup file).
func ReadLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// Atoi is strconv.Atoi with -1 for anything that is not a number (a pid
// or descriptor name read from /proc).
func Atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }
