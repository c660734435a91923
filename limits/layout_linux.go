package limits

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// hostLayout reads /proc/self/mountinfo and /proc/self/cgroup.
func hostLayout() (layout, error) {
	mi, err := readBounded("/proc/self/mountinfo")
	if err != nil {
		return layout{}, fmt.Errorf("limits: read mountinfo: %w", err)
	}
	mounts, err := parseMountinfo(mi)
	if err != nil {
		return layout{}, fmt.Errorf("limits: /proc/self/mountinfo: %w", err)
	}
	pcb, err := readBounded("/proc/self/cgroup")
	if err != nil {
		return layout{}, fmt.Errorf("limits: read /proc/self/cgroup: %w", err)
	}
	pc, err := parseProcCgroup(pcb)
	if err != nil {
		return layout{}, fmt.Errorf("limits: /proc/self/cgroup: %w", err)
	}
	return buildLayout(mounts, pc), nil
}

// readBounded reads at most maxFile bytes of a (kernel) file, never
// blocking (a FIFO gives nothing). By hand with open(2) and read(2), not
// os.Open: an *os.File costs an epoll registration attempt, a finaliser
// and a growing buffer, and a step of a session reads about sixteen
// cgroup files (2.3 µs a file against os.ReadFile's 5.2 µs here:
// BenchmarkReadBounded, BenchmarkPeerOSReadFile).
func readBounded(name string) ([]byte, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for len(buf) < maxFile {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):min(cap(buf), maxFile)])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

// readInt reads a one-value cgroup file.
func readInt(dir, file string) (int64, error) {
	b, err := readBounded(filepath.Join(dir, file))
	if err != nil {
		return 0, err
	}
	v, err := parseInt(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return v, nil
}

// readKV reads a "key value" cgroup file.
func readKV(dir, file string) (map[string]int64, error) {
	b, err := readBounded(filepath.Join(dir, file))
	if err != nil {
		return nil, err
	}
	return parseKV(b), nil
}

// writeFile writes one value to an existing cgroup file (never creating it).
func writeFile(dir, file, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

func exists(dir, file string) bool {
	_, err := os.Lstat(filepath.Join(dir, file))
	return err == nil
}
