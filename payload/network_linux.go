package payload

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// The network payloads go around the proxy: direct TCP and UDP over IPv4
// and IPv6, DNS, raw, packet, netlink and vsock sockets, unix sockets, and
// an HTTP client told to ignore the proxy variables.
func init() {
	Register("connect", connect)
	Register("udp-send", udpSend)
	Register("dns-query", dnsQuery)
	Register("udp-route", udpRoute)
	Register("resolver-route", resolverRoute)
	Register("routes", routes)
	Register("raw-socket", rawSocket)
	Register("socket", socketFamily)
	Register("http-direct", httpDirect)
	Register("unix-connect", unixConnect)
	Register("tcp-fastopen", tcpFastOpen)
	Register("mptcp-connect", mptcpConnect)
	Register("tcp-listen", tcpListen)
}

// tcp-listen bind|autobind: open a TCP server socket, bound to a port of
// every address ("bind": 0.0.0.0, port 0) or bound by listen(2) itself
// ("autobind"), which in a sandbox without a network namespace of its
// own would take connections from the host's network.
func tcpListen(args []string) int {
	if len(args) != 1 || args[0] != "bind" && args[0] != "autobind" {
		return usage("tcp-listen", "bind|autobind")
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return report(outcome("tcp-listen", err, ""))
	}
	defer unix.Close(fd)
	if args[0] == "bind" {
		if err := unix.Bind(fd, &unix.SockaddrInet4{}); err != nil {
			return report(outcome("tcp-listen", fmt.Errorf("bind: %w", err), ""))
		}
	}
	err = unix.Listen(fd, 1)
	ok := ""
	if err == nil {
		if sa, serr := unix.Getsockname(fd); serr == nil {
			ok = fmt.Sprintf("listening on port %d of every address", sa.(*unix.SockaddrInet4).Port)
		}
	}
	return report(outcome("tcp-listen", err, ok))
}

// netWait bounds every network wait of a payload.
const netWait = 2 * time.Second

// connect ADDR: a direct TCP connection, ignoring the proxy.
func connect(args []string) int {
	if len(args) != 1 {
		return usage("connect", "HOST:PORT")
	}
	c, err := net.DialTimeout("tcp", args[0], netWait)
	if err == nil {
		c.Close()
	}
	return report(outcome("connect", err, "connected to "+args[0]+" directly"))
}

// udp-send ADDR: send a datagram and wait for an answer.
func udpSend(args []string) int {
	if len(args) != 1 {
		return usage("udp-send", "HOST:PORT")
	}
	c, err := net.Dial("udp", args[0])
	if err != nil {
		return report(outcome("udp-send", err, ""))
	}
	defer c.Close()
	if _, err := c.Write([]byte("airlock-selftest ping")); err != nil {
		return report(outcome("udp-send", err, ""))
	}
	_ = c.SetReadDeadline(time.Now().Add(netWait / 2))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	r := outcome("udp-send", err, fmt.Sprintf("got a %d-byte answer from %s", n, args[0]))
	if err != nil {
		r.Evidence = "sent a datagram to " + args[0] + "; no answer: " + err.Error()
	}
	return report(r)
}

// dns-query ADDR [NAME]: a DNS query over UDP straight to a resolver.
func dnsQuery(args []string) int {
	if len(args) < 1 || len(args) > 2 {
		return usage("dns-query", "HOST:PORT [NAME]")
	}
	name := "example.com."
	if len(args) == 2 {
		name = dns.Fqdn(args[1])
	}
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	c := &dns.Client{Net: "udp", Timeout: netWait / 2}
	in, _, err := c.Exchange(m, args[0])
	r := outcome("dns-query", err, "")
	if err == nil {
		r.Evidence = fmt.Sprintf("%s answered %s with %d records", args[0], name, len(in.Answer))
	} else {
		r.Evidence = "no answer from " + args[0] + ": " + err.Error()
	}
	return report(r)
}

// udp-route ADDR: connect a UDP socket, which only looks up a route and
// sends nothing: it succeeds only if the sandbox has a route there.
func udpRoute(args []string) int {
	if len(args) != 1 {
		return usage("udp-route", "HOST:PORT")
	}
	return report(routeTo("udp-route", args[0]))
}

func routeTo(name, addr string) Report {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return outcome(name, err, "")
	}
	defer c.Close()
	r := outcome(name, nil, fmt.Sprintf("a route to %s exists (local address %s); nothing was sent", addr, c.LocalAddr()))
	r.Detail["local"] = c.LocalAddr().String()
	return r
}

// resolver-route: look for a route to each resolver of /etc/resolv.conf
// (route lookups only, nothing is sent).
func resolverRoute([]string) int {
	servers := nameservers("/etc/resolv.conf")
	if len(servers) == 0 {
		servers = []string{"192.0.2.53"} // TEST-NET-1: documentation only
	}
	r := Report{Attempt: "resolver-route", Detail: map[string]string{}}
	var seen []string
	for _, s := range servers {
		rr := routeTo("resolver-route", net.JoinHostPort(s, "53"))
		r.Detail[s] = okOr(rr.Errno)
		seen = append(seen, s+": "+okOr(rr.Errno))
		if rr.Succeeded {
			r.Succeeded = true
		}
		if r.Errno == "" {
			r.Errno = rr.Errno
		}
	}
	r.Evidence = "route lookups to the resolvers (nothing sent): " + strings.Join(seen, ", ")
	return report(r)
}

// nameservers lists the nameserver addresses of a resolv.conf.
func nameservers(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			if a, err := netip.ParseAddr(fields[1]); err == nil && a.Zone() == "" {
				out = append(out, a.String())
			}
		}
	}
	return out
}

// routes: the interfaces and routes the sandbox sees. Anything beyond lo
// and its own local routes is a way out.
func routes([]string) int {
	r := Report{Attempt: "routes", Detail: map[string]string{}}
	ifaces, err := procColumn("/proc/net/dev", 2, 0)
	if err != nil {
		return report(outcome("routes", err, ""))
	}
	for i, n := range ifaces {
		ifaces[i] = strings.TrimSuffix(n, ":")
	}
	v4, err4 := procColumn("/proc/net/route", 1, 0, 1)
	v6, err6 := procColumn("/proc/net/ipv6_route", 0, 9, 0, 1)
	if err4 != nil || err6 != nil {
		return report(outcome("routes", fmt.Errorf("read routes: %v %v", err4, err6), ""))
	}
	var out []string
	for _, n := range ifaces {
		if n != "lo" {
			out = append(out, "interface "+n)
		}
	}
	if len(v4) > 0 {
		out = append(out, "IPv4 routes: "+strings.Join(v4, "; "))
	}
	for _, l := range v6 {
		if dev, _, _ := strings.Cut(l, " "); dev != "lo" {
			out = append(out, "IPv6 route "+l)
		}
	}
	r.Detail["interfaces"] = strings.Join(ifaces, ",")
	r.Detail["ipv4Routes"] = strconv.Itoa(len(v4))
	r.Detail["ipv6Routes"] = strconv.Itoa(len(v6))
	r.Succeeded = len(out) > 0
	r.Evidence = fmt.Sprintf("interfaces %s; no IPv4 route; %d IPv6 routes, all on lo", r.Detail["interfaces"], len(v6))
	if r.Succeeded {
		r.Evidence = "ways out: " + strings.Join(out, "; ")
	}
	return report(r)
}

// procColumn returns, for each line of a /proc table after skip header
// lines, the named fields joined by a space.
func procColumn(path string, skip int, cols ...int) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if i < skip || len(f) == 0 {
			continue
		}
		var sel []string
		for _, c := range cols {
			if c < len(f) {
				sel = append(sel, f[c])
			}
		}
		out = append(out, strings.Join(sel, " "))
	}
	return out, nil
}

// raw-socket inet|inet6: open a raw ICMP socket. The probe asks for a
// protocol number the kernel refuses with EINVAL before any permission
// check: EPERM there too means the seccomp filter answered.
func rawSocket(args []string) int {
	if len(args) != 1 || (args[0] != "inet" && args[0] != "inet6") {
		return usage("raw-socket", "inet|inet6")
	}
	family, proto := unix.AF_INET, unix.IPPROTO_ICMP
	if args[0] == "inet6" {
		family, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
	}
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err == nil {
		unix.Close(fd)
	}
	return report(withProbe(outcome("raw-socket", err, "opened a raw "+args[0]+" socket"), "raw-"+args[0]))
}

// socketFamilies are the families socket FAMILY tries.
var socketFamilies = map[string][3]int{
	"packet":  {unix.AF_PACKET, unix.SOCK_RAW, 0x0300}, // ETH_P_ALL, network order
	"netlink": {unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
	"vsock":   {unix.AF_VSOCK, unix.SOCK_STREAM, 0},
	"alg":     {unix.AF_ALG, unix.SOCK_SEQPACKET, 0},
}

// socket packet|netlink|vsock|alg: open a socket of a family the sandbox
// has no use for.
func socketFamily(args []string) int {
	f, ok := socketFamilies[safeArg(args, 0)]
	if len(args) != 1 || !ok {
		return usage("socket", "packet|netlink|vsock|alg")
	}
	fd, err := unix.Socket(f[0], f[1]|unix.SOCK_CLOEXEC, f[2])
	if err == nil {
		unix.Close(fd)
	}
	return report(outcome("socket", err, "opened an "+args[0]+" socket"))
}

// http-direct URL: an HTTP client with the proxy variables ignored.
func httpDirect(args []string) int {
	if len(args) != 1 {
		return usage("http-direct", "URL")
	}
	c := &http.Client{Timeout: netWait, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(args[0])
	if err != nil {
		return report(outcome("http-direct", err, ""))
	}
	resp.Body.Close()
	r := outcome("http-direct", nil, fmt.Sprintf("%s answered %s without the proxy", args[0], resp.Status))
	r.Detail["status"] = strconv.Itoa(resp.StatusCode)
	return report(r)
}

// unix-connect PATH: connect to a unix socket; @NAME is abstract.
func unixConnect(args []string) int {
	if len(args) != 1 {
		return usage("unix-connect", "PATH|@NAME")
	}
	c, err := net.DialTimeout("unix", args[0], netWait)
	if err == nil {
		c.Close()
	}
	return report(outcome("unix-connect", err, "connected to "+args[0]))
}

// tcp-fastopen ADDR: send data with the SYN (sendto with MSG_FASTOPEN),
// a connect that does not go through connect(2).
func tcpFastOpen(args []string) int {
	if len(args) != 1 {
		return usage("tcp-fastopen", "IP:PORT")
	}
	if args[0] == "inside" {
		return report(fastOpenInside())
	}
	ap, err := netip.ParseAddrPort(args[0])
	if err != nil {
		return usage("tcp-fastopen", "IP:PORT|inside")
	}
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	if ap.Addr().Is6() {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return report(outcome("tcp-fastopen", err, ""))
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1})
	err = unix.Sendto(fd, []byte("airlock-selftest\n"), unix.MSG_FASTOPEN, sa)
	if err != nil {
		return report(outcome("tcp-fastopen", err, ""))
	}
	buf := make([]byte, 64)
	n, rerr := unix.Read(fd, buf)
	r := outcome("tcp-fastopen", rerr, fmt.Sprintf("sent data with the SYN to %s and read %d bytes back", args[0], n))
	r.Detail["sendto"] = "ok"
	return report(r)
}

// fastOpenInside listens on a loopback port inside the sandbox and
// reaches it twice: with connect(2), and with data sent with the SYN. It
// shows whether a restriction on TCP connect covers the implicit connect
// of TCP Fast Open.
func fastOpenInside() Report {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return outcome("tcp-fastopen", err, "")
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	c, cerr := net.DialTimeout("tcp", addr, netWait)
	if cerr == nil {
		c.Close()
	}
	ap := netip.MustParseAddrPort(addr)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return outcome("tcp-fastopen", err, "")
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1})
	ferr := unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()})
	if ferr == nil {
		buf := make([]byte, 16)
		_, ferr = unix.Read(fd, buf)
	}
	r := outcome("tcp-fastopen", ferr, "reached "+addr+" with TCP Fast Open")
	r.Detail["connect"] = okOr(errnoName(cerr))
	r.Detail["fastopen"] = okOr(errnoName(ferr))
	r.Evidence = fmt.Sprintf("to a listener inside at %s: connect(2) %s, Fast Open %s", addr, r.Detail["connect"], r.Detail["fastopen"])
	return r
}

// mptcp-connect IP:PORT|inside|proxy: connect to the address twice, with
// a TCP socket and with an MPTCP one (IPPROTO_MPTCP), a protocol that
// Landlock's TCP connect rule does not cover. "inside" aims at a listener
// the payload opens on the sandbox's lo, "proxy" at the proxy's port
// ($HTTP_PROXY). Succeeded means MPTCP connected where TCP was refused.
func mptcpConnect(args []string) int {
	if len(args) != 1 {
		return usage("mptcp-connect", "IP:PORT|inside|proxy")
	}
	addr := args[0]
	switch addr {
	case "inside":
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return report(outcome("mptcp-connect", err, ""))
		}
		defer ln.Close()
		addr = ln.Addr().String()
	case "proxy":
		addr = strings.TrimPrefix(os.Getenv("HTTP_PROXY"), "http://")
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return usage("mptcp-connect", "IP:PORT|inside|proxy")
	}
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	tcpErr := connect4(sa, unix.IPPROTO_TCP)
	mpErr := connect4(sa, unix.IPPROTO_MPTCP)
	r := outcome("mptcp-connect", mpErr, "connected to "+addr+" over MPTCP")
	r.Succeeded = mpErr == nil && tcpErr != nil
	r.Detail["tcp"] = connected(tcpErr)
	r.Detail["mptcp"] = connected(mpErr)
	r.Evidence = fmt.Sprintf("to %s: TCP %s, MPTCP %s", addr, r.Detail["tcp"], r.Detail["mptcp"])
	return report(r)
}

// connected names err's errno, "connected" when there is none.
func connected(err error) string {
	if err == nil {
		return "connected"
	}
	return errnoName(err)
}

// connect4 opens a stream socket of protocol proto and connects it to sa.
func connect4(sa *unix.SockaddrInet4, proto int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, sa)
}
