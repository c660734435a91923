package limits

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mountinfoHybrid is this project's CI host (Debian, hybrid), trimmed.
const mountinfoHybrid = `22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
30 23 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 30 0:32 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 30 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:35 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const procCgroupHybrid = `9:name=systemd:/
8:pids:/
6:freezer:/
4:memory:/process_api/8d896dfe
2:cpuacct:/
1:cpu:/
0::/
`

func TestBuildLayoutHybrid(t *testing.T) {
	mounts, err := parseMountinfo([]byte(mountinfoHybrid))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := parseProcCgroup([]byte(procCgroupHybrid))
	if err != nil {
		t.Fatal(err)
	}
	l := buildLayout(mounts, pc)
	if l.mode != ModeHybrid || l.unified != "/sys/fs/cgroup/unified" || l.unifiedOwn != "/" {
		t.Errorf("layout = %+v", l)
	}
	want := map[string]string{"memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids", "cpuacct": "/sys/fs/cgroup/cpuacct", "freezer": "/sys/fs/cgroup/freezer"}
	if !maps.Equal(l.v1, want) {
		t.Errorf("v1 mounts = %v, want %v", l.v1, want)
	}
	if l.v1Own["memory"] != "/process_api/8d896dfe" {
		t.Errorf("own memory cgroup = %q", l.v1Own["memory"])
	}
}

func TestBuildLayoutV2AndNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo, cgroup string
		mode                    Mode
		unified, own            string
	}{
		{"systemd v2", "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n",
			"0::/user.slice/user-0.slice/session-1.scope\n", ModeV2, "/sys/fs/cgroup", "/user.slice/user-0.slice/session-1.scope"},
		{"container bind of a subtree", "30 23 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
			"0::/docker/abc/init\n", ModeV2, "/sys/fs/cgroup", "/init"},
		{"subtree that hides the caller", "30 23 0:26 /other /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			"0::/docker/abc\n", ModeNone, "", ""},
		{"second cgroup2 mount is not preferred", "41 23 0:36 / /tmp/x rw - cgroup2 cgroup2 rw\n30 23 0:36 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
			"0::/\n", ModeV2, "/sys/fs/cgroup/unified", "/"},
		{"no cgroups", "22 27 0:21 / /proc rw - proc proc rw\n", "", ModeNone, "", ""},
		{"escaped mount point", `30 23 0:26 / /mnt/cg\040two rw - cgroup2 cgroup2 rw` + "\n", "0::/\n", ModeV2, "/mnt/cg two", "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mounts, err := parseMountinfo([]byte(tc.mountinfo))
			if err != nil {
				t.Fatal(err)
			}
			pc, err := parseProcCgroup([]byte(tc.cgroup))
			if err != nil {
				t.Fatal(err)
			}
			l := buildLayout(mounts, pc)
			if l.mode != tc.mode || l.unified != tc.unified || l.unifiedOwn != tc.own {
				t.Errorf("layout = mode %s unified %q own %q; want %s %q %q", l.mode, l.unified, l.unifiedOwn, tc.mode, tc.unified, tc.own)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"garbage", "1:memory", "1:memory:relative"} {
		if _, err := parseProcCgroup([]byte(in)); !errors.Is(err, errFormat) {
			t.Errorf("parseProcCgroup(%q) err = %v, want errFormat", in, err)
		}
	}
	for _, in := range []string{"1 2 3", "1 2 3 4 5 6 7 8"} {
		if _, err := parseMountinfo([]byte(in)); !errors.Is(err, errFormat) {
			t.Errorf("parseMountinfo(%q) err = %v, want errFormat", in, err)
		}
	}
	for _, in := range []string{"", "12x", "-", "99999999999999999999"} {
		if _, err := parseInt([]byte(in)); !errors.Is(err, errFormat) {
			t.Errorf("parseInt(%q) err = %v, want errFormat", in, err)
		}
	}
	if v, err := parseInt([]byte("max\n")); err != nil || v != -1 {
		t.Errorf(`parseInt("max") = %d, %v`, v, err)
	}
}

func TestParseKV(t *testing.T) {
	kv := parseKV([]byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\nbad\nx y\nusage_usec 12 extra\noom_kill 9\n"))
	want := map[string]int64{"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 3}
	if !maps.Equal(kv, want) {
		t.Errorf("parseKV = %v, want %v", kv, want)
	}
	kv = parseKV([]byte("oom_kill_disable 0\n\t oom_kill \t 3 \noom_kill 9\nmax 1\n"), "oom_kill", "none")
	if want := map[string]int64{"oom_kill": 3}; !maps.Equal(kv, want) {
		t.Errorf("parseKV with keys = %v, want %v", kv, want)
	}
}

// parseKVFields is parseKV as it was, with bytes.Fields: the reference.
func parseKVFields(b []byte) map[string]int64 {
	out := make(map[string]int64)
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			continue
		}
		if _, dup := out[string(f[0])]; !dup {
			out[string(f[0])] = v
		}
	}
	return out
}

func TestV2Candidates(t *testing.T) {
	for _, tc := range []struct {
		own, parent string
		rootless    bool
		want        string
	}{
		{"/", "", false, "/"},
		{"/", "", true, "/"},
		{"/user.slice/u/session.scope", "", false, "/user.slice/u /user.slice/u/session.scope /"},
		{"/user.slice/u/session.scope", "", true, "/user.slice/u /user.slice/u/session.scope"},
		{"/a", "", true, "/ /a"},
		{"/a/b", "airlock", false, "/airlock"},
	} {
		if got := strings.Join(v2Candidates(tc.own, tc.parent, tc.rootless), " "); got != tc.want {
			t.Errorf("v2Candidates(%q, %q, %v) = %q, want %q", tc.own, tc.parent, tc.rootless, got, tc.want)
		}
	}
}

func TestCapsValidate(t *testing.T) {
	good := Caps{Wall: time.Second, CPU: time.Second, MemoryBytes: 1, Tasks: 1, DiskWriteBytes: 1, OpenFiles: 1, OutputBytes: 1}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", good, err)
	}
	for field, mut := range map[string]func(*Caps){
		"wall":           func(c *Caps) { c.Wall = 0 },
		"cpu":            func(c *Caps) { c.CPU = -time.Second },
		"memoryBytes":    func(c *Caps) { c.MemoryBytes = 0 },
		"tasks":          func(c *Caps) { c.Tasks = 0 },
		"diskWriteBytes": func(c *Caps) { c.DiskWriteBytes = -1 },
		"openFiles":      func(c *Caps) { c.OpenFiles = 0 },
		"outputBytes":    func(c *Caps) { c.OutputBytes = 0 },
	} {
		c := good
		mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "cap "+field+" is") {
			t.Errorf("Validate with %s bad: err = %v, want it named", field, err)
		}
	}
	if _, err := New(Caps{}, Options{}); err == nil {
		t.Error("New(Caps{}) succeeded: a zero cap must not mean unlimited")
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string // "" for valid
	}{
		{Options{}, ""},
		{Options{Name: "run-1.a_b"}, ""},
		{Options{Name: "../x"}, "name"},
		{Options{Name: ".."}, "name"},
		{Options{Name: strings.Repeat("a", 65)}, "name"},
		{Options{Name: "a/b"}, "name"},
		{Options{Require: []string{"seccomp", "landlock", RequireCgroupPids}}, ""},
		{Options{Require: []string{"cgroup-memroy"}}, "unknown cgroup mechanism"},
		{Options{Require: []string{"cgroups"}}, "unknown cgroup mechanism"},
	} {
		err := tc.o.validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("validate(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestRequireErrorMessage(t *testing.T) {
	e := &RequireError{Missing: []string{"cgroup-memory", "cgroup-pids"}, Why: map[string]string{"cgroup-memory": "a", "cgroup-pids": "b"}}
	want := "limits: policy requires cgroup-memory (a), cgroup-pids (b): not available on this host for this user"
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if !errors.Is(e, ErrUnavailable) {
		t.Error("RequireError is not ErrUnavailable")
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte(mountinfoHybrid))
	f.Add([]byte(`30 23 0:26 /a\040b /mnt/x\134y rw - cgroup2 cgroup2 rw` + "\n"))
	f.Add([]byte("1 2 3 4 5 6 - cgroup"))
	f.Fuzz(func(t *testing.T, b []byte) {
		mounts, err := parseMountinfo(b)
		if err != nil {
			return
		}
		pc, err := parseProcCgroup([]byte(procCgroupHybrid))
		if err != nil {
			t.Fatal(err)
		}
		l := buildLayout(mounts, pc)
		for c, own := range l.v1Own {
			if !strings.HasPrefix(own, "/") || l.v1[c] == "" {
				t.Fatalf("controller %s: own %q mount %q", c, own, l.v1[c])
			}
		}
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	f.Add([]byte(procCgroupHybrid))
	f.Add([]byte("0::/a/b\n1:cpu,cpuacct:/x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pc, err := parseProcCgroup(b)
		if err != nil {
			return
		}
		for c, p := range pc.v1 {
			if c == "" || !strings.HasPrefix(p, "/") {
				t.Fatalf("controller %q path %q", c, p)
			}
		}
		if pc.hasUnified && !strings.HasPrefix(pc.unified, "/") {
			t.Fatalf("unified path %q", pc.unified)
		}
		for _, own := range []string{pc.unified, "/"} {
			if rel, ok := relativeTo(own, "/"); ok && !strings.HasPrefix(rel, "/") {
				t.Fatalf("relativeTo(%q) = %q", own, rel)
			}
		}
	})
}

func FuzzParseKV(f *testing.F) {
	f.Add([]byte("usage_usec 12\nuser_usec 3\n"))
	f.Add([]byte("max 1\n"))
	f.Add([]byte("a 1\n\u00a0b\u00852\n c  3 \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		all := parseKV(b)
		for k := range all {
			if k == "" || strings.ContainsAny(k, " \t\n") {
				t.Fatalf("key %q", k)
			}
		}
		if want := parseKVFields(b); !maps.Equal(all, want) {
			t.Fatalf("parseKV(%q) = %v, bytes.Fields gives %v", b, all, want)
		}
		keys := slices.Sorted(maps.Keys(all))
		if len(keys) > 2 {
			keys = keys[:2]
		}
		some := parseKV(b, keys...)
		for _, k := range keys {
			if some[k] != all[k] {
				t.Fatalf("parseKV(%q, %q) = %v, all %v", b, keys, some, all)
			}
		}
		if len(some) != len(keys) {
			t.Fatalf("parseKV(%q, %q) = %v", b, keys, some)
		}
		_, _ = parseInt(b)
	})
}
