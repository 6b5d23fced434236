package ops

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/airgap/airgap/dist"
)

// HealthCheckOptions configure HealthCheck.
type HealthCheckOptions struct {
	URL        string // e.g. https://127.0.0.1:8443/healthz
	CAFile     string // PEM roots to trust; "" for the system's
	ServerName string // name to verify the certificate against, if not the URL's host
	Timeout    time.Duration
	// Wait, when positive, makes HealthCheck ask again (every
	// healthRetry) until the appliance answers healthy or Wait has
	// passed, for scripts that start serve and go on once it answers.
	Wait time.Duration
}

// healthRetry is how often HealthCheck asks again under opt.Wait.
const healthRetry = 200 * time.Millisecond

// healthJSON bounds the /healthz answer HealthCheck reads.
var healthJSON = dist.JSONLimit{MaxBytes: 64 << 10, MaxDepth: 8}

// HealthCheck asks a running appliance's /healthz, for container health
// checks (a scratch image has no curl). It succeeds only on a 200 whose
// JSON says "ok", over TLS verified against opt.CAFile. Bounded: one
// request at a time, each within opt.Timeout (default 5 s), at most 64 KiB
// read, no redirects; with opt.Wait, requests every 200 ms for at most
// opt.Wait plus one opt.Timeout, and the last failure is the error.
func HealthCheck(ctx context.Context, opt HealthCheckOptions) error {
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Second
	}
	deadline := time.Now().Add(opt.Wait)
	for {
		err := healthOnce(ctx, opt)
		if err == nil || opt.Wait <= 0 || time.Now().After(deadline) {
			if err != nil && opt.Wait > 0 {
				err = fmt.Errorf("not healthy after %s: %w", opt.Wait, err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(healthRetry):
		}
	}
}

// healthOnce is one request of HealthCheck.
func healthOnce(ctx context.Context, opt HealthCheckOptions) error {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: opt.ServerName}
	if opt.CAFile != "" {
		pemData, err := os.ReadFile(opt.CAFile)
		if err != nil {
			return fmt.Errorf("--ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pemData) {
			return fmt.Errorf("--ca %s: no PEM certificate in it", opt.CAFile)
		}
	}
	cl := &http.Client{
		Timeout:       opt.Timeout,
		Transport:     &http.Transport{TLSClientConfig: tc, Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opt.URL, nil)
	if err != nil {
		return err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", opt.URL, resp.Status)
	}
	var doc struct {
		Status string `json:"status"`
	}
	if err := healthJSON.Unmarshal(body, &doc); err != nil || doc.Status != "ok" {
		return fmt.Errorf("%s: not an airgap health answer", opt.URL)
	}
	return nil
}
