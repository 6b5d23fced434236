# /etc/airgap/serve.hcl: settings for 'airgap serve --config'. Every flag of
# 'airgap serve' can be set here under the same name; flags on the command
# line win, then AIRGAP_HOSTNAME / AIRGAP_LISTEN / AIRGAP_METRICS_LISTEN,
# then this file. Check it with:
#   airgap serve --config /etc/airgap/serve.hcl --check-config
# 'systemctl reload airgap' applies log-level, trusted-proxy,
# passthrough-proxy, hostname, cert, key and access without a restart.

store    = "/var/lib/airgap/store"
listen   = ":443"
hostname = ["airgap.site.example"]   # every name clients use; add registry.terraform.io etc. if DNS points here

tls = "local"                        # local (built-in CA), acme, or files (cert, key)

log-level  = "info"                  # info: one access line per request
log-format = "json"                  # for the journal and log shippers

# Load balancers. One that terminates HTTP and appends the client to
# X-Forwarded-For (HAProxy "mode http" with "option forwardfor", re-encrypting
# to serve): trusted-proxy, and serve believes that header from it. One that
# passes TLS through (HAProxy "mode tcp"): passthrough-proxy, never
# trusted-proxy: its X-Forwarded-For is whatever the client wrote. Both are
# exempt from the per-address limits (cap clients on the balancer).
trusted-proxy     = []
passthrough-proxy = []

# "HOST:PORT" serves /metrics over plain HTTP on a listener of its own (a
# management address); "main" serves it on the main TLS listener, to every
# client that reaches it; "" or "off": none.
metrics-listen = ""

# Connection limits. Excess connections are closed at accept. Behind a load
# balancer every client has its address: list it as above, which exempts it
# from max-conns-per-ip (not from max-conns).
max-conns        = 2048              # in total: ~50 KiB and one descriptor each
max-conns-per-ip = 128               # per client address (IPv6: per /64)
send-timeout     = "60s"             # close a download whose client reads nothing for this long

# Who may fetch what: an access file of tokens ('airgap token create
# --access /etc/airgap/access.hcl ...'; owned by airgap, mode 0600), re-read
# within a second of every change. Without it everyone who reaches the
# appliance may fetch everything. Turning it on or off needs a restart.
# access = "/etc/airgap/access.hcl"
# download-url-ttl = "15m"            # how long the signed package URLs in answers stay valid

# One JSON line per package or archive download ('airgap audit' sums it up);
# several replicas may share one file. Rotated past audit-log-max-size.
# audit-log          = "/var/log/airgap/audit.jsonl"
# audit-log-max-size = "100MiB"
# audit-log-keep     = 9

# Download counts ("What is used" in docs/operations.md): each completed
# package or module download, per version and platform, kept in
# STORE/state/usage and shared by replicas; shown on the catalog pages, by
# 'airgap inventory --usage' and used by 'airgap prune --unused-for'.
# usage       = "on"
# usage-flush = "10s"                # how often the counts are written
