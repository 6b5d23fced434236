package ops

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Listen opens one of serve's listeners: what it is for ("the main HTTPS
// listener") and where the address was set ("--listen", or the config
// file's FILE:LINE:COL), so that a port in use, a privileged port or an
// address this machine does not have fails with a message that names the
// listener and what to change, not Go's bare "bind: address already in
// use".
func Listen(what, where, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	var hint string
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		hint = fmt.Sprintf("another program holds the port (another 'airgap serve'? 'ss -ltnp' shows which): stop it, or give %s another address", where)
	case errors.Is(err, syscall.EACCES):
		hint = fmt.Sprintf("ports below 1024 need privileges: give %s a port from 1024 up (e.g. :8443) and forward 443 to it, or grant CAP_NET_BIND_SERVICE (the systemd unit does)", where)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		hint = fmt.Sprintf("this machine has no such address: give %s one of its addresses, or :PORT for all of them", where)
	default:
		hint = fmt.Sprintf("check %s", where)
	}
	return nil, fmt.Errorf("cannot open %s on %s (%s): %v\nhint: %s", what, addr, where, innermost(err), hint)
}

// innermost is the last error in err's chain ("address already in use").
func innermost(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
