package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The three v1 hierarchies a memory and a task cap need, and their
// limits: bench/sandbox's caps (512 MiB, 20 tasks). airlock makes its
// group in five (cpu and freezer too) and in cgroup2 where it is mounted
// (limits/group_linux.go); this host is v1 hybrid (docs/sandbox.md,
// "Caps").
var hierarchies = []struct{ name, file, value string }{
	{"memory", "memory.limit_in_bytes", strconv.Itoa(512 << 20)},
	{"pids", "pids.max", "20"},
	{"cpuacct", "", ""},
}

// cgroups is one run's group, a directory in each hierarchy.
type cgroups struct {
	done chan struct{} // closed once make has returned
	err  error         // make's
	dirs []string
}

// startCgroups makes the group in a goroutine, beside the init's start
// (airlock makes a session step's group while the step before runs).
func startCgroups() *cgroups {
	cg := &cgroups{done: make(chan struct{})}
	go func() {
		defer close(cg.done)
		cg.err = cg.make()
	}()
	return cg
}

// make makes the group under the caller's own group in each hierarchy
// (/proc/self/cgroup: the caller may sit in a nested one) and writes its
// limits.
func (cg *cgroups) make() error {
	own, err := ownGroups()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("floor-%d", os.Getpid())
	for _, h := range hierarchies {
		parent, ok := own[h.name]
		if !ok {
			return fmt.Errorf("cgroup: no %s v1 hierarchy in /proc/self/cgroup", h.name)
		}
		dir := "/sys/fs/cgroup/" + h.name + parent + "/" + name
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, dir)
		if h.file != "" {
			if err := os.WriteFile(dir+"/"+h.file, []byte(h.value), 0); err != nil {
				return fmt.Errorf("cgroup: limit: %w", err)
			}
		}
	}
	return nil
}

// ownGroups maps each v1 controller to the caller's group in it.
func ownGroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	own := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller,controller:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = strings.TrimSuffix(parts[2], "/")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cgroup: /proc/self/cgroup: %w", err)
	}
	return own, nil
}

// place moves pid (the init, before it execs the command: v1 has no
// CLONE_INTO_CGROUP) into the group in every hierarchy.
func (cg *cgroups) place(pid int) error {
	<-cg.done
	if cg.err != nil {
		return cg.err
	}
	for _, dir := range cg.dirs {
		if err := os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup: place the init: %w", err)
		}
	}
	return nil
}

// remove removes what make made; the caller has waited for every process
// in the group.
func (cg *cgroups) remove() error {
	<-cg.done
	var errs []error
	for _, dir := range cg.dirs {
		if err := os.Remove(dir); err != nil {
			errs = append(errs, fmt.Errorf("cgroup: %w", err))
		}
	}
	cg.dirs = nil
	return errors.Join(errs...)
}
