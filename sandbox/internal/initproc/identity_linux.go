package initproc

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox's own identity (docs/sandbox.md, "What the sandbox sees"):
// a bound /etc, the host's or an image's, would show the host's resolver,
// names and ids. The init writes its own versions into /.airlock/id and
// mounts each, read-only, over the file the sandbox would see, wherever a
// symbolic link makes it live inside the view; the host files that name
// its network or prove its identity are masked empty.

// ownFiles are the files of /etc the sandbox gets its own version of.
var ownFiles = []string{"resolv.conf", "hosts", "hostname", "mailname", "machine-id"}

// maskedEtc are masked empty (a directory by an empty one) where the view
// has them: the host's SSH host keys (the public ones identify it) and
// its network configuration (addresses, networks, cloud metadata setup).
var maskedEtc = []string{"network/interfaces", "network/interfaces.d", "netplan", "NetworkManager",
	"systemd/network", "cloud", "wpa_supplicant"}

// maskedProc are the host-wide files of the sandbox's /proc that identify
// the host: the kernel's command line (which may name its addresses and
// devices) is masked empty, the boot id replaced by the sandbox's own.
var maskedProc = []string{"cmdline"}

// identity is the content of the sandbox's own files, keyed by name.
func (s *initState) identity() map[string]string {
	host := s.cfg.Hostname
	if host == "" {
		host = "localhost"
	}
	return map[string]string{
		"resolv.conf": "# airlock: the sandbox has no DNS server: the egress proxy ($HTTPS_PROXY)\n" +
			"# resolves the names its policy allows (docs/sandbox.md).\noptions timeout:1 attempts:1\n",
		"hosts":      "127.0.0.1\tlocalhost " + host + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":   host + "\n",
		"mailname":   host + "\n",
		"machine-id": randomHex(16) + "\n",
		"boot_id":    uuid() + "\n",
	}
}

// writeIdentity writes the identity files into dir, part of /.airlock.
func (s *initState) writeIdentity(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	for name, body := range s.identity() {
		if err := os.WriteFile(dir+"/"+name, []byte(body), 0o444); err != nil {
			return fmt.Errorf("write the sandbox's %s: %w", name, err)
		}
	}
	if err := os.WriteFile(dir+"/empty", nil, 0o444); err != nil {
		return fmt.Errorf("make a mask file: %w", err)
	}
	return os.Mkdir(dir+"/empty.d", 0o555)
}

// ownIdentity puts the sandbox's own identity files over the view's under
// root (before /proc is mounted) and masks the host's identifying ones.
func (s *initState) ownIdentity(root string) error {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the root: %w", err)
	}
	defer unix.Close(rfd)
	id := root + "/.airlock/id/"
	for _, name := range ownFiles {
		if err := over(rfd, "etc/"+name, id+name); err != nil {
			return err
		}
	}
	for _, p := range maskedEtc {
		if err := over(rfd, "etc/"+p, id); err != nil {
			return err
		}
	}
	keys, err := sshHostKeys(rfd)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := over(rfd, "etc/ssh/"+k, id); err != nil {
			return err
		}
	}
	return nil
}

// ownProc does for the sandbox's /proc, mounted under root, what
// ownIdentity does for /etc.
func ownProc(root string) error {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the root: %w", err)
	}
	defer unix.Close(rfd)
	id := root + "/.airlock/id/"
	for _, p := range maskedProc {
		if err := over(rfd, "proc/"+p, id); err != nil {
			return err
		}
	}
	return over(rfd, "proc/sys/kernel/random/boot_id", id+"boot_id")
}

// over mounts a read-only clone of src over the file or directory at
// path, resolved inside the root open at rfd (a symbolic link is followed
// as the sandbox will follow it). src ending in "/" names the directory
// of the identity files: the mask is then its empty file or its empty
// directory, after what path is. A path that does not resolve inside
// shows nothing and is left alone.
func over(rfd int, path, src string) error {
	fd, err := unix.Openat2(rfd, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("own /%s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("own /%s: %w", path, err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if strings.HasSuffix(src, "/") {
		src += map[bool]string{true: "empty.d", false: "empty"}[isDir]
	} else if isDir {
		return nil // not a file here: nothing of the host's to replace
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("own /%s: clone %s: %w", path, src, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("own /%s: %w", path, err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("own /%s: %w", path, err)
	}
	return nil
}

// sshHostKeys lists the SSH host keys (private and public) in the view's
// /etc/ssh.
func sshHostKeys(rfd int) ([]string, error) {
	fd, err := unix.Openat2(rfd, "etc/ssh", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EACCES) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list /etc/ssh: %w", err)
	}
	d := os.NewFile(uintptr(fd), "/etc/ssh")
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list /etc/ssh: %w", err)
	}
	var keys []string
	for _, n := range names {
		if strings.HasPrefix(n, "ssh_host_") {
			keys = append(keys, n)
		}
	}
	return keys, nil
}

// random returns n bytes from the kernel's random source (getrandom(2),
// which does not fail for so few once the pool is ready; crypto/rand
// would add its packages to the init).
func random(n int) []byte {
	b := make([]byte, n)
	unix.Getrandom(b, 0)
	return b
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string { return hex.EncodeToString(random(n)) }

// uuid returns a random (version 4) UUID, the form of the kernel's boot id.
func uuid() string {
	b := random(16)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
