package limits

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// readBounded reads at most maxFile bytes of a (kernel) file.
func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFile))
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
