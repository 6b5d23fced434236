package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/certs"
	"github.com/airgap/airgap/server/ops"
)

// reloadable is what SIGHUP may change in a running serve without dropping
// a connection: the log level, the log file (reopened, for logrotate, even
// if unchanged in name), the trusted proxies, the certificate names (local
// CA and ACME: certificates for new names are obtained, removed names are
// no longer maintained), the certificate files (re-read now, even if
// unchanged in name) and the access file (its path, and its contents,
// which serve also re-reads within a second of a change). Every other
// setting needs a restart, and a reload that changes one says so; so does
// turning access control on or off, which a restart must do (a signal
// should never open the appliance to everyone).
type reloadable struct {
	Config  *ServeConfig
	Level   *slog.LevelVar
	Proxies *access.TrustedProxies
	TLS     *certs.Setup
	Log     *slog.Logger
	Access  *access.AccessControl
	LogOut  *ops.LogWriter

	mu sync.Mutex
}

// reloadOnSignal calls Reload on every SIGHUP until ctx ends. It takes
// SIGHUP over before it returns (the reloads run in a goroutine of their
// own): a SIGHUP sent as soon as serve says it is ready (systemd's
// ExecReload right after start) must reload, not take the signal's default
// action, which ends the process.
func reloadOnSignal(ctx context.Context, r *reloadable) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				r.reload(ctx)
			}
		}
	}()
}

// reload re-reads the configuration (file and environment over the same
// flags) and applies what can change. A configuration that does not
// validate changes nothing. It logs what it did.
func (r *reloadable) reload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops.Notify(ops.NotifyReloading)
	defer ops.Notify(ops.NotifyReady)
	next, err := r.Config.reload()
	if err != nil {
		r.Log.Error("SIGHUP: configuration not reloaded; still running the previous one", "err", err)
		return err
	}
	changed := changedSettings(r.Config, next)
	var applied, restart []string
	for _, name := range changed {
		switch settingNamed(name).reload { // the settings table's
		case reloadApplied:
			continue
		case reloadWhileOn: // access
			if r.Access != nil && next.Access != "" {
				continue
			}
		}
		restart = append(restart, name)
	}
	if r.Access != nil {
		if next.Access == "" {
			next.Access = r.Config.Access // still enforced until a restart
		}
		if msg, err := r.Access.ReloadFrom(next.Access); err != nil {
			r.Log.Error("SIGHUP: access file not reloaded; still enforcing the previous one", "err", err)
			next.Access = r.Config.Access
		} else {
			applied = append(applied, msg)
		}
	}
	// The level changes before the summary is logged when it goes down
	// and after when it goes up, so the summary shows at either level.
	setLevel := func() {}
	if slices.Contains(changed, "log-level") {
		lv, _ := next.Level()
		setLevel = func() {
			if r.Level != nil {
				r.Level.Set(lv)
			}
		}
		if r.Level != nil && lv <= r.Level.Level() {
			setLevel()
			setLevel = func() {}
		}
		applied = append(applied, "log-level="+next.LogLevel)
	}
	defer func() { setLevel() }()
	if r.LogOut != nil {
		// Always reopened: logrotate moves the file away and sends SIGHUP.
		if err := r.LogOut.Reopen(next.LogFile); err != nil {
			r.Log.Error("SIGHUP: log file not reopened; still writing to the previous one", "err", err)
			next.LogFile = r.Config.LogFile
		} else if next.LogFile != "" {
			applied = append(applied, "log-file reopened: "+next.LogFile)
		}
	}
	if slices.Contains(changed, "trusted-proxy") && r.Proxies != nil {
		r.Proxies.Set(next.TrustedProxy)
		applied = append(applied, "trusted-proxy="+strings.Join(next.TrustedProxy, ","))
	}
	if slices.Contains(changed, "passthrough-proxy") && r.Proxies != nil {
		r.Proxies.SetPassthrough(next.PassthroughProxy)
		applied = append(applied, "passthrough-proxy="+strings.Join(next.PassthroughProxy, ","))
	}
	attrs := []any{}
	if r.TLS != nil {
		switch {
		case r.TLS.FromFiles():
			if err := r.TLS.ReloadFiles(next.Cert, next.Key); err != nil {
				r.Log.Error("SIGHUP: keeping the previous certificate", "err", err)
				next.Cert, next.Key = r.Config.Cert, r.Config.Key
			} else {
				applied = append(applied, "certificate re-read from "+next.Cert)
				attrs = append(attrs, "cert_expires", r.TLS.NotAfter().Format(time.RFC3339))
			}
			if slices.Contains(changed, "hostname") {
				applied = append(applied, "hostname="+strings.Join(next.Hostname, ",")+" (with tls files the names are the certificate's)")
			}
		case r.TLS.Managed() && slices.Contains(changed, "hostname"):
			// With the local CA the machine's own names stay covered, as
			// at start: dropping them would fail every client that
			// reaches the appliance by its host name or address.
			added, removed, err := r.TLS.SetNames(ctx, r.TLS.CertNames(next.certNames()))
			if err != nil {
				r.Log.Error("SIGHUP: certificate names not changed", "err", err)
				next.Hostname = r.Config.Hostname
			} else {
				applied = append(applied, fmt.Sprintf("hostname=%s (certificates added for [%s], removed for [%s])",
					strings.Join(next.Hostname, ","), strings.Join(added, " "), strings.Join(removed, " ")))
			}
		}
	}
	r.Config = next
	attrs = append(attrs, "applied", strings.Join(applied, "; "))
	if len(restart) > 0 {
		attrs = append(attrs, "needs_restart", strings.Join(restart, ","))
		r.Log.Warn("SIGHUP: configuration reloaded; some changes need a restart (systemctl restart airgap)", attrs...)
	} else {
		r.Log.Info("SIGHUP: configuration reloaded", attrs...)
	}
	return nil
}
