package ops

import "github.com/coreos/go-systemd/v22/daemon"

// Notify tells systemd (Type=notify) about the service's state when
// NOTIFY_SOCKET is set, and does nothing otherwise: NotifyReady once
// listening, NotifyStopping when shutting down, NotifyReloading while
// SIGHUP is handled (followed by NotifyReady). It uses go-systemd's
// SdNotify, which writes one datagram to $NOTIFY_SOCKET. (The unit uses
// Type=notify with ExecReload sending SIGHUP, not Type=notify-reload,
// which needs systemd 253 and MONOTONIC_USEC.)
func Notify(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// States for Notify.
const (
	NotifyReady     = daemon.SdNotifyReady
	NotifyStopping  = daemon.SdNotifyStopping
	NotifyReloading = daemon.SdNotifyReloading
)
