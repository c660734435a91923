package selftest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/sandbox"
)

// canaryAttempt is a payload aimed at a canary the host opens for it.
// open returns the canary; args builds the payload's arguments from the
// canary's address.
func canaryAttempt(f Family, name, control, what string, open func(fx *fixtures) (*canary, error),
	judge func(*observation) verdict, args func(addr string) []string) attempt {
	return attempt{family: f, name: name, control: control, what: what, sandboxed: true,
		plan: func(fx *fixtures) (*plan, error) {
			c, err := open(fx)
			if errors.Is(err, errNoIPv6) {
				return settled(skipped("the host has no IPv6 loopback (" + err.Error() + "): there is no [::1] canary to reach")), nil
			}
			if err != nil {
				return nil, fmt.Errorf("open the host's canary: %w", err)
			}
			return &plan{req: payloadRequest(toolPayload, taskNone, args(c.addr)...),
				judge: withCanary(c, judge), cleanup: []func(){c.stop}}, nil
		}}
}

func tcp4(fx *fixtures) (*canary, error) { return fx.streamCanary("tcp4", "127.0.0.1:0") }
func tcp6(fx *fixtures) (*canary, error) { return v6(fx.streamCanary("tcp6", "[::1]:0")) }
func udp4(fx *fixtures) (*canary, error) { return fx.packetCanary("udp4", "127.0.0.1:0") }
func udp6(fx *fixtures) (*canary, error) { return v6(fx.packetCanary("udp6", "[::1]:0")) }

// errNoIPv6 marks a canary the host could not open on [::1].
var errNoIPv6 = errors.New("cannot listen on [::1]")

func v6(c *canary, err error) (*canary, error) {
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoIPv6, err)
	}
	return c, nil
}

func abstractUnix(fx *fixtures) (*canary, error) {
	return fx.streamCanary("unix", fmt.Sprintf("@%s-%d", fx.token, fx.seq.Add(1)))
}

func pathUnix(fx *fixtures) (*canary, error) {
	return fx.streamCanary("unix", filepath.Join(fx.root, fmt.Sprintf("canary-%d.sock", fx.seq.Add(1))))
}

func with(name string) func(string) []string {
	return func(addr string) []string { return []string{name, addr} }
}

// networkAttempts go around the proxy. TCP connect is Landlock's to
// refuse (only the proxy's port may be connected to), and TCP Fast Open
// and MPTCP, which Landlock's rule does not see, the filter's; everything
// else finds an empty network namespace with lo only, where the host's
// loopback canaries do not exist; unix sockets, sockets of other
// families and raw sockets are the filter's.
func networkAttempts() []attempt {
	nw := FamilyNetwork
	return []attempt{
		canaryAttempt(nw, "tcp4-host-loopback", ControlLandlock, "a direct TCP connection to a canary on the host's 127.0.0.1",
			tcp4, errnoIs("EACCES"), with("connect")),
		canaryAttempt(nw, "tcp6-host-loopback", ControlLandlock, "a direct TCP connection to a canary on the host's [::1]",
			tcp6, errnoIs("EACCES"), with("connect")),
		payloadAttempt(nw, "tcp4-inside-port", ControlLandlock, "a TCP connection to 127.0.0.1:1 inside the sandbox (the kernel would answer ECONNREFUSED)",
			toolPayload, taskNone, errnoIs("EACCES"), "connect", "127.0.0.1:1"),
		canaryAttempt(nw, "tcp-fastopen", ControlSeccomp, "data sent with the SYN (MSG_FASTOPEN, no connect(2)) to a canary on the host's 127.0.0.1",
			tcp4, errnoIs("EPERM"), with("tcp-fastopen")),
		payloadAttempt(nw, "tcp-fastopen-inside", ControlSeccomp, "TCP Fast Open to a listener inside the sandbox, past Landlock's connect rule (it does not see the implicit connect)",
			toolPayload, taskNone, errnoIs("EPERM"), "tcp-fastopen", "inside"),
		canaryAttempt(nw, "udp4-host-loopback", ControlNetNS, "a UDP datagram to a canary on the host's 127.0.0.1",
			udp4, udpOr(errnoIs("ECONNREFUSED")), with("udp-send")),
		canaryAttempt(nw, "udp6-host-loopback", ControlNetNS, "a UDP datagram to a canary on the host's [::1]",
			udp6, udpOr(errnoIs("ECONNREFUSED")), with("udp-send")),
		payloadAttempt(nw, "dns-stub-resolver", ControlNetNS, "a DNS query straight to 127.0.0.53:53 (systemd-resolved's stub)",
			toolPayload, taskNone, udpOr(errnoIs("ECONNREFUSED")), "dns-query", "127.0.0.53:53", "example.com"),
		canaryAttempt(nw, "dns-host-resolver", ControlNetNS, "a DNS query straight to a resolver canary on the host's 127.0.0.1",
			udp4, udpOr(errnoIs("ECONNREFUSED")), func(a string) []string { return []string{"dns-query", a, "exfil.attacker.example"} }),
		payloadAttempt(nw, "dns-resolv-conf-route", ControlNetNS, "a route to the resolvers in /etc/resolv.conf (UDP connect: a route lookup, nothing sent)",
			toolPayload, taskNone, udpOr(errnoIs("ENETUNREACH")), "resolver-route"),
		payloadAttempt(nw, "routes", ControlNetNS, "interfaces and routes seen inside: anything but lo is a way out",
			toolPayload, taskNone, notSucceeded, "routes"),
		canaryAttempt(nw, "http-ignore-proxy", ControlLandlock, "an HTTP client that ignores $HTTP_PROXY, to a canary on the host's 127.0.0.1",
			tcp4, errnoIs("EACCES"), func(a string) []string { return []string{"http-direct", "http://" + a + "/"} }),
		payloadAttempt(nw, "raw-socket", ControlSeccomp, "a raw ICMP socket (AF_INET, SOCK_RAW)",
			toolPayload, taskNone, filtered("EPERM"), "raw-socket", "inet"),
		payloadAttempt(nw, "raw6-socket", ControlSeccomp, "a raw ICMPv6 socket (AF_INET6, SOCK_RAW)",
			toolPayload, taskNone, filtered("EPERM"), "raw-socket", "inet6"),
		payloadAttempt(nw, "packet-socket", ControlSeccomp, "a packet socket (AF_PACKET): the kernel would answer EPERM without CAP_NET_RAW",
			toolPayload, taskNone, errnoIs("EAFNOSUPPORT"), "socket", "packet"),
		payloadAttempt(nw, "netlink-socket", ControlSeccomp, "a netlink route socket (AF_NETLINK), which the kernel would open",
			toolPayload, taskNone, errnoIs("EAFNOSUPPORT"), "socket", "netlink"),
		{family: nw, name: "vsock-socket", control: ControlSeccomp, sandboxed: true,
			what: "an AF_VSOCK socket, the way from a VM guest to its hypervisor", plan: planVsock},
		canaryAttempt(nw, "abstract-unix", ControlSeccomp, "a connection to an abstract unix socket the host listens on",
			abstractUnix, errnoIs("EACCES"), with("unix-connect")),
		canaryAttempt(nw, "unix-socket-path", ControlSeccomp, "a connection to a unix socket at its host path",
			pathUnix, errnoIs("EACCES"), with("unix-connect")),
		{family: nw, name: "unix-socket-bound-tree", control: ControlSeccomp, sandboxed: true,
			what: "a connection to a host listener's unix socket (mode 0777) in a directory bound read-only into the sandbox",
			plan: planBoundSocket},
		payloadAttempt(nw, "docker-socket", ControlSeccomp, "a connection to /var/run/docker.sock",
			toolPayload, taskNone, errnoIs("EACCES"), "unix-connect", "/var/run/docker.sock"),
		payloadAttempt(nw, "systemd-socket", ControlSeccomp, "a connection to systemd's private socket /run/systemd/private",
			toolPayload, taskNone, errnoIs("EACCES"), "unix-connect", "/run/systemd/private"),
		payloadAttempt(nw, "mptcp-inside", ControlSeccomp, "an MPTCP connection to a listener on the sandbox's lo, where TCP gets Landlock's EACCES",
			toolPayload, taskNone, detailIs("tcp", "EACCES", errnoIs("EPROTONOSUPPORT")), "mptcp-connect", "inside"),
		payloadAttempt(nw, "mptcp-proxy-port", ControlSeccomp, "an MPTCP connection to the proxy's port, which TCP may reach",
			toolPayload, taskNone, detailIs("tcp", "connected", errnoIs("EPROTONOSUPPORT")), "mptcp-connect", "proxy"),
	}
}

// boundSocketInside is where planBoundSocket binds its directory.
const boundSocketInside = "/srv/airlock-selftest"

// planBoundSocket binds a fresh host directory read-only into the
// sandbox with a host listener on a unix socket in it that anyone may
// connect to: a read-only mount does not stop connect(2), the filter's
// refusal of unix sockets does.
func planBoundSocket(fx *fixtures) (*plan, error) {
	dir, err := fx.dir("sockets")
	if err != nil {
		return nil, err
	}
	c, err := fx.streamCanary("unix", filepath.Join(dir, "host.sock"))
	if err != nil {
		return nil, fmt.Errorf("open the host's canary: %w", err)
	}
	if err := os.Chmod(c.addr, 0o777); err != nil {
		c.stop()
		return nil, fmt.Errorf("selftest: %w", err)
	}
	return &plan{req: payloadRequest(toolPayload, taskNone, "unix-connect", boundSocketInside+"/host.sock"),
		judge: withCanary(c, errnoIs("EACCES")), cleanup: []func(){c.stop},
		binds: []sandbox.Bind{{Host: dir, Inside: boundSocketInside}}}, nil
}
