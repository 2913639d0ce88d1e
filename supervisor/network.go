package supervisor

import (
	"net"
	"strconv"
	"sync/atomic"

	"sandbox-executable/landlock"
	"sandbox-executable/mountns"
	"sandbox-executable/netproxy"
	"sandbox-executable/policy"
	"sandbox-executable/remedy"
	"sandbox-executable/sockmed"
)

// ProxyPort is where the allowlist proxy listens inside the program's
// network namespace (an empty namespace: every port is free).
const ProxyPort = 3128

// NetworkReport says how the Plan's network mode is enforced.
type NetworkReport struct {
	Mode      policy.NetworkMode
	Mechanism []string
	// Allowlist mode: where the proxy listens, as the program sees it.
	Proxy string
	// DaemonSockets says how unix sockets of daemons outside the writable
	// roots are kept out of reach.
	DaemonSockets string
	// NotEnforced lists what this host cannot stop in this mode.
	NotEnforced []string
	// Destinations are, in allowlist mode, what each entry lets the proxy
	// connect to (netproxy.Matcher.Destinations).
	Destinations []netproxy.Destination
}

// netChoice is the network decision of a run.
type netChoice struct {
	NetworkReport
	netns     bool // the program gets a network namespace of its own
	proxy     bool // an allowlist proxy runs
	hostProxy bool // ... on the host's loopback (degraded): no namespace
	denyUnix  bool // socket(AF_UNIX) fails (seccomp.Host)
	degraded  string
	sockets   socketChoice
}

// chooseNetwork decides how the network mode is enforced. exact says a
// mount namespace (and so a network namespace) can be had, noNamespaces why
// not when it cannot; words names the helper's flags in a remedy; sockets
// is how daemons' unix sockets are kept out of reach (given whether there
// will be a network namespace).
func chooseNetwork(p *policy.Plan, exact bool, abi int, allowDegraded bool, noNamespaces string, words remedy.Words, sockets func(netns bool) socketChoice) (netChoice, error) {
	if p.Network.Mode == policy.NetworkLoopback && !exact {
		// Without a namespace of its own, the loopback is the host's:
		// its daemons would be reachable. The stricter mode runs.
		why := "loopback needs a network namespace of the run's own, and none can be had here (" + noNamespaces + ")"
		p.Network.Mode = policy.NetworkNone
		p.Network.Why += "; narrowed to none: " + why
		p.Notes = append(p.Notes, "The network is narrowed from loopback to none: "+why+".")
	}
	n := netChoice{NetworkReport: NetworkReport{Mode: p.Network.Mode}}
	mech := func(s string) { n.Mechanism = append(n.Mechanism, s) }
	switch p.Network.Mode {
	case policy.NetworkLoopback:
		n.netns = true
		mech("a network namespace of the run's own with only its loopback: the program's own servers and clients reach each other, nothing outside is reachable")
		mech("seccomp: no raw, packet, vsock or non-route netlink sockets")
	case policy.NetworkNone:
		mech("seccomp: no sockets but AF_UNIX")
		switch {
		case landlock.Supports(abi, landlock.FeatUDP):
			mech("Landlock: no TCP or UDP bind, connect or send")
		case landlock.Supports(abi, landlock.FeatTCP):
			mech("Landlock: no TCP bind or connect")
		}
		if exact {
			n.netns = true
			mech("an empty network namespace (loopback only)")
		}
	case policy.NetworkFull:
		mech("the host's network; seccomp denies raw, packet, vsock and non-route netlink sockets")
	case policy.NetworkAllowlist:
		n.proxy = true
		n.Destinations = netproxy.NewMatcher(p.Network.Allowlist).Destinations()
		if exact {
			n.netns = true
			n.Proxy = "127.0.0.1:" + strconv.Itoa(ProxyPort)
			mech("a network namespace with only loopback: no route out")
			mech("a filtering proxy outside (HTTP CONNECT, plain HTTP, SOCKS5) listening at " + n.Proxy + " inside it, names resolved outside")
			break
		}
		why := "the network allowlist needs a network namespace, and none can be had here (" + noNamespaces + ")"
		if !allowDegraded {
			return n, &RefusedError{Reason: "refusing to run: " + why + "; run as root or where user namespaces are allowed, or pass " + words.Say(remedy.AllowDegraded) + " to rely on Landlock's port rule alone"}
		}
		if !landlock.Supports(abi, landlock.FeatTCP) {
			return n, &RefusedError{Reason: "refusing to run: " + why + ", and Landlock ABI " + strconv.Itoa(abi) + " cannot restrict TCP at all: the allowlist would not be enforced even in part"}
		}
		n.hostProxy = true
		n.Proxy = "127.0.0.1 (a port chosen at start)"
		if landlock.Supports(abi, landlock.FeatUDP) {
			mech("a filtering proxy on the host's loopback; Landlock: TCP connect only to its port, no UDP")
			n.NotEnforced = append(n.NotEnforced, "any host's service on the proxy's port number is reachable directly")
			n.degraded = "network allowlist without a network namespace: Landlock allows TCP connect to the proxy's port on any host"
			break
		}
		mech("a filtering proxy on the host's loopback; Landlock: TCP connect only to its port")
		n.NotEnforced = append(n.NotEnforced, "any host's service on the proxy's port number is reachable directly", "UDP is not restricted")
		n.degraded = "network allowlist without a network namespace: Landlock allows TCP connect to the proxy's port on any host, and UDP is not restricted"
	}
	n.sockets = sockets(n.netns)
	switch n.sockets.how {
	case socketsByLandlock:
		n.DaemonSockets = "Landlock (resolve_unix, ABI 9): a pathname unix socket is reached only beneath the writable roots, checked by the kernel at every connect and send"
	case socketsMediated:
		n.DaemonSockets = "mediated: connect, sendto with an address, sendmsg and sendmmsg are carried out by the supervisor on the program's own socket; a pathname unix socket is reached only when the file its name leads to, in the program's view and at the time of the call, lies beneath a writable root with no other name (refused with EACCES otherwise, and recorded), however it is named, whenever and in whatever network namespace it was bound"
		n.DaemonSockets += "; every mediated call is made as the program: its pathname looked up and the call made without the supervisor's capabilities, and of its ancillary data only SCM_RIGHTS, the program's own SCM_CREDENTIALS and, on internet sockets, IP_PKTINFO, IP_TOS, IP_TTL, IPV6_PKTINFO, IPV6_TCLASS, IPV6_HOPLIMIT, IPV6_DONTFRAG, UDP_SEGMENT, transmit timestamps and SO_PRIORITY up to 6 forwarded (anything else, SO_MARK among it, refused with EPERM)"
		if n.sockets.landlock {
			n.DaemonSockets += "; Landlock's resolve_unix (ABI 9) underneath: a pathname socket outside the writable roots is refused to the program itself too"
		}
		switch n.sockets.abstract {
		case sockmed.AbstractDirect:
			n.DaemonSockets += "; abstract sockets: only the program's network namespace's, its own"
		default:
			n.DaemonSockets += "; abstract sockets: the host's network namespace is shared and the kernel cannot scope them for the supervisor (a Landlock domain above the program's would deny it every cross-directory rename), so an abstract name is reached only while the supervisor holds the socket it names, taken from one of the sandbox's processes (found through sock_diag), refused with EACCES otherwise"
		}
	default:
		n.DaemonSockets = "socket(AF_UNIX) denied by seccomp (socketpair still works): without a process namespace of its own or the kernel calls mediation needs, the supervisor cannot tell a daemon's socket from the program's own"
		n.denyUnix = true
		n.NotEnforced = append(n.NotEnforced, "a socketpair(AF_UNIX, SOCK_DGRAM) socket can still send datagrams to a daemon's datagram socket by its path (sendto)")
		if !landlock.Supports(abi, landlock.FeatScoping) && !n.netns {
			n.NotEnforced = append(n.NotEnforced, "abstract unix datagram sockets outside the sandbox are reachable from a socketpair socket (Landlock scoping needs ABI 6)")
		}
	}
	return n, nil
}

// proxyRun is a running allowlist proxy.
type proxyRun struct {
	proxy   *netproxy.Proxy
	refused atomic.Int64
	done    chan struct{}
}

// proxyEnv points the program's HTTP clients at the proxy, for every
// destination: NO_PROXY is emptied, so an inherited list cannot send a
// client around the proxy (into a namespace with no route), and "localhost"
// means what the allowlist says (the host's, when an entry names it).
func proxyEnv(env []string, addr string) []string {
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env = withEnv(env, k, "http://"+addr)
	}
	for _, k := range []string{"ALL_PROXY", "all_proxy"} {
		env = withEnv(env, k, "socks5h://"+addr)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		env = withEnv(env, k, "")
	}
	return env
}

// startProxy serves allowlist on l until stop; refusals go to deny.
func startProxy(allowlist []policy.HostPort, l net.Listener, deny func(Denial)) *proxyRun {
	r := &proxyRun{done: make(chan struct{})}
	r.proxy = netproxy.New(netproxy.NewMatcher(allowlist), netproxy.Options{OnEvent: func(e netproxy.Event) {
		if e.Allowed {
			return
		}
		r.refused.Add(1)
		deny(Denial{Time: e.Time, Kind: DenialNetwork, Method: e.Method, Host: e.Host, Port: int(e.Port), Reason: e.Reason, Client: e.Client})
	}})
	go func() {
		defer close(r.done)
		_ = r.proxy.Serve(l)
	}()
	return r
}

func (r *proxyRun) stop() netproxy.Stats {
	_ = r.proxy.Close()
	<-r.done
	return r.proxy.Stats()
}

// netnsWhy says why a run gets no network namespace.
func netnsWhy(av mountns.Availability) string {
	switch {
	case !av.OK:
		return av.Why
	case !av.Network:
		return av.NetworkWhy
	}
	return "Landlock-only filesystem mode: no namespaces are made for the filesystem"
}
