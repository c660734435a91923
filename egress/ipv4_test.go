package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
)

func TestParseInetAton(t *testing.T) {
	ok := []struct{ in, want string }{
		{"169.254.169.254", "169.254.169.254"},
		{"2852039166", "169.254.169.254"},
		{"0xA9FEA9FE", "169.254.169.254"},
		{"0251.0376.0251.0376", "169.254.169.254"},
		{"169.254.43518", "169.254.169.254"},
		{"169.16689662", "169.254.169.254"},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254"},
		{"169.0xfe.0251.254", "169.254.169.254"},
		{"0", "0.0.0.0"},
		{"00", "0.0.0.0"},
		{"0x0", "0.0.0.0"},
		{"127.1", "127.0.0.1"},
		{"1.2.3", "1.2.0.3"},
		{"4294967295", "255.255.255.255"},
		{"0xffffffff", "255.255.255.255"},
		{"037777777777", "255.255.255.255"},
		{"255.16777215", "255.255.255.255"},
		{"255.255.65535", "255.255.255.255"},
		{"0x000000000000000001", "0.0.0.1"},
		{"000000000000000000010", "0.0.0.8"},
	}
	for _, c := range ok {
		a, err := parseInetAton(c.in)
		if err != nil || a != netip.MustParseAddr(c.want) {
			t.Errorf("parseInetAton(%q) = %v, %v; want %s", c.in, a, err, c.want)
		}
	}
	bad := []string{
		"", ".", "1.", ".1", "1..2", "1.2.3.4.5", "0x", "0x.1", "1.0x", "08", "09.1.1.1", "0xg",
		"256.1.1.1", "1.256.1.1", "1.1.256.1", "1.1.1.256", "1.16777216", "1.1.65536",
		"4294967296", "0x100000000", "040000000000", "99999999999999999999999999",
		"1 ", "-1", "+1", "1.-1", "1e3", "0b101",
	}
	for _, in := range bad {
		if a, err := parseInetAton(in); err == nil {
			t.Errorf("parseInetAton(%q) = %v, want an error", in, a)
		}
	}
}

// randomAtonSpelling writes a random inet_aton spelling of a; when valid
// is false it may also write spellings that inet_aton rejects.
func randomAtonSpelling(r *rand.Rand, a netip.Addr, valid bool) string {
	b := a.As4()
	u := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	n := 1 + r.IntN(4)
	var parts []uint64
	switch n {
	case 1:
		parts = []uint64{u}
	case 2:
		parts = []uint64{u >> 24, u & 0xffffff}
	case 3:
		parts = []uint64{u >> 24, u >> 16 & 0xff, u & 0xffff}
	default:
		parts = []uint64{u >> 24, u >> 16 & 0xff, u >> 8 & 0xff, u & 0xff}
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		if !valid && r.IntN(8) == 0 {
			p += uint64(r.IntN(300)) << (8 * r.IntN(4))
		}
		zeros := strings.Repeat("0", r.IntN(3))
		switch r.IntN(3) {
		case 0:
			out[i] = fmt.Sprintf("%d", p)
		case 1:
			out[i] = "0" + zeros + fmt.Sprintf("%o", p)
		default:
			x := "0x"
			if r.IntN(2) == 0 {
				x = "0X"
			}
			h := fmt.Sprintf("%x", p)
			if r.IntN(2) == 0 {
				h = strings.ToUpper(h)
			}
			out[i] = x + zeros + h
		}
		if !valid && r.IntN(10) == 0 {
			out[i] += []string{"8", "9", "g", "x", ""}[r.IntN(5)]
		}
	}
	s := strings.Join(out, ".")
	if !valid && r.IntN(10) == 0 {
		s += []string{".", ".0", ".1.1.1.1"}[r.IntN(3)]
	}
	return s
}

// TestInetAtonAgainstLibc compares parseInetAton with the C library's
// inet_aton(3), through Python's socket.inet_aton (a direct call: no name
// lookup, no traffic), on generated valid and invalid spellings.
func TestInetAtonAgainstLibc(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: cannot reach the C library's inet_aton")
	}
	r := rand.New(rand.NewPCG(1, 2))
	var inputs []string
	inputs = append(inputs, metadataSpellings...)
	for range 3000 {
		a := netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
		if r.IntN(4) == 0 {
			a = netip.MustParseAddr("169.254.169.254")
		}
		inputs = append(inputs, randomAtonSpelling(r, a, r.IntN(3) != 0))
	}
	var clean []string
	for _, in := range inputs {
		if in != "" && !strings.ContainsAny(in, " \t\n\x00") && isASCIIString(in) {
			clean = append(clean, in)
		}
	}
	script := `import socket, sys
for line in sys.stdin:
    s = line.rstrip("\n")
    try:
        print(socket.inet_ntoa(socket.inet_aton(s)))
    except OSError:
        print("ERR")
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(strings.Join(clean, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("python3 inet_aton helper failed: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	i, checked := 0, 0
	for sc.Scan() {
		in, libc := clean[i], sc.Text()
		i++
		a, err := parseInetAton(in)
		got := "ERR"
		if err == nil {
			got = a.String()
		}
		if got != libc {
			t.Errorf("parseInetAton(%q) = %s, libc inet_aton = %s", in, got, libc)
		}
		checked++
	}
	if checked != len(clean) {
		t.Fatalf("compared %d of %d spellings", checked, len(clean))
	}
	t.Logf("compared %d spellings with libc inet_aton", checked)
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
