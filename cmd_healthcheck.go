package main

// healthcheck: asks a running appliance whether it is healthy. Its
// flags, its help text and the call into package server.

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/server/ops"
)

type healthcheckCmd struct{ opt ops.HealthCheckOptions }

func (c *healthcheckCmd) synopsis() string {
	return "ask a running appliance's /healthz (container health checks; exit 0 when healthy)"
}

func (c *healthcheckCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("healthcheck", pflag.ContinueOnError)
	fs.StringVar(&c.opt.URL, "url", "https://127.0.0.1:8443/healthz", "the appliance's /healthz URL")
	fs.StringVar(&c.opt.CAFile, "ca", "", "PEM CA to trust (e.g. STORE/tls/ca/ca.pem); default the system roots")
	fs.StringVar(&c.opt.ServerName, "server-name", "", "verify the certificate for this name instead of the URL's host")
	fs.DurationVar(&c.opt.Timeout, "timeout", 5*time.Second, "give up on one request after this long")
	fs.DurationVar(&c.opt.Wait, "wait", 0, "ask again until the appliance answers or this long has passed (for scripts that just started serve)")
	return fs
}

func (*healthcheckCmd) help() verbHelp {
	return verbHelp{
		usage: "[--url https://HOST:PORT/healthz] [--ca FILE] [--wait DURATION]",
		about: "Asks a running appliance's /healthz and exits 0 when it answers 200 in time: the\ncontainer's HEALTHCHECK and a probe for load balancers and scripts.",
		examples: []string{"airgap healthcheck --url https://127.0.0.1:8443/healthz --ca /store/tls/ca/ca.pem",
			"airgap healthcheck --url https://airgap.site.example/healthz",
			"airgap serve --store store --listen 127.0.0.1:8443 & airgap healthcheck --url https://localhost:8443/healthz --ca airgap-ca.pem --wait 30s"},
	}
}

func (c *healthcheckCmd) run(args []string) error {
	if err := checkUsage("healthcheck", args, nil); err != nil {
		return err
	}
	return ops.HealthCheck(context.Background(), c.opt)
}
