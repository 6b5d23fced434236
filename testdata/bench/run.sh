#!/usr/bin/env bash
# make bench: airgap against what a user would otherwise use, measured in the
# same run on the same machine. Prints machine facts, then one table of
# figures and ratios. SMOKE=1 runs everything at small sizes (seconds), so the
# script does not rot.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

# SITE_*: the real site of section 4 (provider zips of SITE_BYTES in all,
# each a plugin binary of SITE_UNPACKED bytes unpacked, and SITE_MODULES
# modules; SITE_SBOM_SAMPLE of its packages are hashed again to measure what
# the Go build information costs). BENCH_SITE_GIB overrides its size (e.g. 2
# for a quicker look).
if [ -n "${SMOKE:-}" ]; then
  DUR=2s; SDUR=1s; ROUNDS=1; CONNS=8; BIG=$((16<<20)); EXP_N=3; EXP_SIZE=$((2<<20)); SYN=2000
  # Zips larger than zstd's window (8 MiB), as real ones are: smaller
  # ones would let zstd find each zip's twin in the one before.
  SITE_BYTES=$((40<<20)); SITE_UNPACKED=$((56<<20)); SITE_MODULES=4; SITE_SBOM_SAMPLE=2
  BSITE_BYTES=$((40<<20)); BSITE_UNPACKED=$((56<<20))
else
  DUR=10s; SDUR=5s; ROUNDS=3; CONNS=64; BIG=$((256<<20)); EXP_N=10; EXP_SIZE=$((36<<20)); SYN=50000
  SITE_BYTES=$((${BENCH_SITE_GIB:-10}<<30)); SITE_UNPACKED=$((830<<20)); SITE_MODULES=24; SITE_SBOM_SAMPLE=4
  # The bucket section's site: 1 GiB of zips of a 200 MiB plugin (~43 MB
  # each, so that the site rounds up to about 1 GiB, not 1.8).
  BSITE_BYTES=$((1<<30)); BSITE_UNPACKED=$((200<<20))
fi
CACHE=${AIRGAP_TEST_CACHE:-$HOME/.cache/airgap}/bench
# BENCH_SECTIONS picks sections (default all): serve export site scale bucket.
SECTIONS=" ${BENCH_SECTIONS:-serve export site scale bucket} "
on() { [[ $SECTIONS == *" $1 "* ]]; }
on site || SITE_BYTES=0
on bucket || BSITE_BYTES=0

need=()
command -v nginx >/dev/null || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
[ -x /usr/bin/time ] || need+=(time)
command -v zstd >/dev/null || need+=(zstd)
command -v curl >/dev/null || need+=(curl)
command -v unzip >/dev/null || need+=(unzip)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing baselines: ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Disk: the real site's provider packages come to SITE_BYTES rounded up to
# whole version rounds (less than 1 GiB more: 1.75 GiB for 1, 10.5 for
# 10), S below. At most three copies of them are on disk at once: the
# fixture, airgap's download cache and one more (terraform's mirror, the cp
# floor, the warm bundle: one at a time, each removed after use, the cold
# bundle before terraform's mirror); then, with the fixture and the cache
# removed, the bundle, the store and one more (the bundle for the next
# network, then the cp floor of the store; the tar floor replaces the
# store). Measured with a du sampler at BENCH_SITE_GIB=1: a peak of 3.05 S
# (4.05 S before the cold bundle and the cache left early). Needed: 3 x
# (SITE_BYTES + 1 GiB), plus 2 GiB for the rest. Checked before anything
# is built.
TMP=${TMPDIR:-/tmp}
# The bucket section holds its site's bundle, export cache and four
# copies more (the bucket's store, the SDK's upload, the directory store,
# import's scratch): 6x BSITE_BYTES, the real site's fixtures gone by then.
need=$(( (SITE_BYTES > 0 ? (SITE_BYTES + (1<<30)) * 3 : 0) + (2<<30) ))
[ $((BSITE_BYTES * 6)) -le $((need - (2<<30))) ] || need=$(( BSITE_BYTES * 6 + (2<<30) ))
free=$(df --output=avail -B1 "$TMP" | tail -1)
if [ "$free" -lt "$need" ]; then
  echo "make bench needs about $((need>>30)) GiB free in $TMP, and $((free>>30)) GiB are free." >&2
  echo "hint: free some space, point TMPDIR at a bigger disk, or run a smaller site with BENCH_SITE_GIB=N" >&2
  exit 1
fi

W=$(mktemp -d "$TMP/airgap-bench.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$W/nginx.pid" ] && kill "$(cat "$W/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  chmod -R u+w "$W" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT

# BENCH_AIRGAP: another airgap binary to measure (e.g. an older build, for
# a before-and-after in one session); the fixtures are this tree's.
if [ -n "${BENCH_AIRGAP:-}" ]; then cp "$BENCH_AIRGAP" "$W/airgap"; else go build -o "$W/airgap" .; fi
go build -o "$W/benchtool" ./testdata/bench/benchtool
AG="$W/airgap"; BT="$W/benchtool"

echo "== machine"
echo "cpu:      $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "memory:   $(free -h | awk '/Mem:/ {print $2}')"
echo "kernel:   $(uname -r)"
echo "go:       $(go version | cut -d' ' -f3)"
echo "nginx:    $(nginx -v 2>&1 | cut -d/ -f2)"
echo "wrk:      $(wrk -v 2>&1 | head -1 | cut -d' ' -f2)"
echo "terraform:$(terraform version 2>/dev/null | head -1 | cut -d' ' -f2)"
if [ -n "${SMOKE:-}" ]; then echo "mode:     smoke (small sizes; figures not meaningful)"; else echo "mode:     full"; fi

TABLE="$W/table"
row() { printf '| %-50s | %16s | %16s | %7s | %-8s |\n' "$@" >> "$TABLE"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f%%", 100 * a / b; else print "-" }'; }
# sbom_cost BUNDLE KEYRING BLOBS SAMPLE -> "EXTRA_S PACKAGES": what reading the
# Go build information in the h1 pass (over h1 alone) and building the SBOM
# cost, on one core, measured by benchtool sbomcost on the bundle's own
# packages (SAMPLE of them, scaled to all; 0: all) in the export cache BLOBS.
sbom_cost() {
  local h1 scan sbom n bytes
  read -r h1 scan sbom n bytes <<<"$("$BT" sbomcost -dir "$W/sbomcost" -bundle "$1" -keyring "$2" -blobs "$3" -sample "$4")"
  echo "$(awk -v h="$h1" -v s="$scan" -v b="$sbom" 'BEGIN { printf "%.4f", (s > h ? s - h : 0) + b }') $n"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
wait_https() { # url cafile
  for _ in $(seq 1 300); do
    curl -fsS --cacert "$2" -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.02
  done
  echo "timed out waiting for $1" >&2; return 1
}
wrk_run() { # url [header] -> "rps p99ms"
  wrk -t2 -c"$CONNS" -d"$DUR" --latency ${2:+-H "$2"} "$1" > "$W/wrk.out" 2>&1 || true
  rps=$(awk '/Requests\/sec/ {print $2}' "$W/wrk.out")
  p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}' "$W/wrk.out")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$W/wrk.out")
  [ -z "$non2xx" ] || echo "warning: $non2xx non-2xx answers from $1" >&2
  echo "${rps:-0} ${p99:-0}"
}

printf '| %-50s | %16s | %16s | %7s | %-8s |\n' "benchmark" "airgap" "baseline" "ratio" "target" > "$TABLE"
printf '|%s|%s|%s|%s|%s|\n' "----------------------------------------------" "------------------" "------------------" "---------" "----------" >> "$TABLE"

# The store, mirror tree and certificate of the serving sections, and the
# site key of the export sections.
on serve || on bucket || BIG=$((1<<20))
eval "$("$BT" serve-fixtures -dir "$W/srv" -size "$BIG" | grep '^BIG_')"
CERT="$W/srv/tls/cert.pem"; KEY="$W/srv/tls/key.pem"; CA="$W/srv/tls/ca.pem"
"$AG" keygen --out "$W/keys/site" --bits 3072 --no-passphrase > /dev/null
: > "$W/empty.tfrc"

# ---------------------------------------------------------------- 1 + 2: serve
if on serve; then
echo "== 1-2: serving metadata and packages over TLS (airgap serve vs nginx, same certificate)"
"$AG" serve --store "$W/srv/store" --listen 127.0.0.1:18443 --tls files --cert "$CERT" --key "$KEY" --log-level warn 2>"$W/serve.log" &
PIDS+=($!); A_PID=$!
# The same airgap as shipped: default flags, an access line per request
# (to stderr, here a file, as under a service manager).
"$AG" serve --store "$W/srv/store" --listen 127.0.0.1:18448 --tls files --cert "$CERT" --key "$KEY" 2>"$W/serve-info.log" &
PIDS+=($!)
cat > "$W/nginx.conf" <<NGINX
worker_processes auto;
pid $W/nginx.pid;
error_log $W/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  types { application/json json; application/zip zip; }
  default_type application/octet-stream;
  client_body_temp_path $W/nginx-tmp;
  server {
    listen 127.0.0.1:18444 ssl;
    ssl_certificate $CERT;
    ssl_certificate_key $KEY;
    ssl_protocols TLSv1.2 TLSv1.3;
    root $W/srv/mirror;
    location /v1/ { default_type application/json; }
  }
}
NGINX
mkdir -p "$W/nginx-tmp"
nginx -c "$W/nginx.conf" -p "$W" -g "user root;" 
A=https://127.0.0.1:18443; N=https://127.0.0.1:18444; L=https://127.0.0.1:18448
wait_https "$A/healthz" "$CA"; wait_https "$L/healthz" "$CA"; wait_https "$N/registry.terraform.io/hashicorp/random/index.json" "$CA"

# The same store served with an access file (a second replica): every
# request carries a token, answers carry URLs signed for it.
BENCH_TOKEN=$("$AG" token create --access "$W/access.hcl" --name bench --allow '**' 2>/dev/null)
AUTH="Authorization: Bearer $BENCH_TOKEN"
# ... and single sign-on: a login token (what 'terraform login' stores) of a
# person whose group may read everything, issued into the store's login
# state as a sign-in would be (the IdP is never asked: what is measured is
# the login token's cost on every request, against the access file's).
cat >> "$W/access.hcl" <<HCL

login {
  issuer    = "https://idp.invalid/realms/bench"
  client_id = "airgap"
}

group "bench" {
  allow = ["**"]
}
HCL
LOGIN_TOKEN=$("$BT" login-token -dir "$W/login" -store "$W/srv/store" -group bench)
LAUTH="Authorization: Bearer $LOGIN_TOKEN"
"$AG" serve --store "$W/srv/store" --listen 127.0.0.1:18447 --tls files --cert "$CERT" --key "$KEY" --log-level warn \
  --access "$W/access.hcl" 2>"$W/serve-token.log" &
PIDS+=($!); T_PID=$!
T=https://127.0.0.1:18447
# A replica of it that the login token is sent to (O), so that each
# server's own CPU time per request can be compared (from /proc: what a
# busy machine moves far less than throughput).
"$AG" serve --store "$W/srv/store" --listen 127.0.0.1:18450 --tls files --cert "$CERT" --key "$KEY" --log-level warn \
  --access "$W/access.hcl" 2>"$W/serve-login.log" &
PIDS+=($!); O_PID=$!
O=https://127.0.0.1:18450
wait_https "$T/healthz" "$CA"; wait_https "$O/healthz" "$CA"

# The same airgap with download counting off (usage = off): the baseline
# of what counting costs a package download. A, L and T count (the
# default), as replicas adding to one STORE/state/usage.
"$AG" serve --store "$W/srv/store" --listen 127.0.0.1:18449 --tls files --cert "$CERT" --key "$KEY" --log-level warn \
  --usage off 2>"$W/serve-nousage.log" &
PIDS+=($!); U_PID=$!
U=https://127.0.0.1:18449
wait_https "$U/healthz" "$CA"

# The registry protocol has no static layout of its own, but a static
# registry is what a site could otherwise run: nginx serves airgap's own
# answers, saved as files, so both sides send the same bytes.
for p in /v1/providers/hashicorp/random/versions /v1/providers/hashicorp/random/3.6.0/download/linux/amd64; do
  mkdir -p "$W/srv/mirror$(dirname "$p")"
  curl -fsS --cacert "$CA" -o "$W/srv/mirror$p" "$A$p"
  curl -fsS --cacert "$CA" "$N$p" | cmp -s - "$W/srv/mirror$p" || { echo "nginx does not serve $p as airgap does" >&2; exit 1; }
done
# The net/http floor: the same answers from memory through net/http's
# server as airgap configures it, with none of airgap's serving code
# (benchtool nethttp). It separates what airgap's own code costs from what
# Go's standard server costs against nginx.
F=https://127.0.0.1:18446
"$BT" nethttp -dir "$W/srv" -listen 127.0.0.1:18446 > "$W/nethttp.log" 2>&1 &
PIDS+=($!)
wait_https "$F/registry.terraform.io/hashicorp/random/index.json" "$CA"

# Each figure is the median of $ROUNDS runs of $SDUR per server, the five
# servers taking turns (a different one first in each round), so that a
# slow moment of the shared machine does not fall on one server only: A is
# airgap at --log-level warn, L the same airgap as shipped (access lines
# on), T airgap with a token (an access file), O a replica of T asked with
# a login token (single sign-on), N nginx, F the net/http floor. For T and
# O also each server's own CPU time per request.
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)
# us_per_req T0 T1: a server's CPU time between two cpu_ticks, per request
# wrk completed (from $W/wrk.out).
us_per_req() { awk -v t="$(($2 - $1))" -v hz="$TCK" '/requests in/ { printf "%.1f", t / hz * 1e6 / $1 }' "$W/wrk.out"; }
trio() { # label airgap-path static-path
  local order=(A L T O N F) r i s url hdr pid t0
  # The token server must answer 200 with either token and 401 without.
  [ "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' -H "$AUTH" "$T$2")" = 200 ] || { echo "the token server refuses $2" >&2; exit 1; }
  [ "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' -H "$LAUTH" "$O$2")" = 200 ] || { echo "the token server refuses $2 with the login token" >&2; exit 1; }
  [ "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' "$T$2")" = 401 ] || { echo "the token server answers $2 without a token" >&2; exit 1; }
  for s in "${order[@]}"; do : > "$W/trio.$s"; done
  for ((r = 0; r < ROUNDS; r++)); do
    for ((i = 0; i < ${#order[@]}; i++)); do
      s=${order[$(( (r + i) % ${#order[@]} ))]}
      hdr="" pid=""
      case $s in A) url="$A$2" ;; L) url="$L$2" ;; T) url="$T$2"; hdr=$AUTH; pid=$T_PID ;; O) url="$O$2"; hdr=$LAUTH; pid=$O_PID ;; N) url="$N$3" ;; F) url="$F$3" ;; esac
      if [ -n "$pid" ]; then
        t0=$(cpu_ticks "$pid")
        DUR=$SDUR wrk_run "$url" "$hdr" > "$W/trio.run"
        echo "$(cat "$W/trio.run") $(us_per_req "$t0" "$(cpu_ticks "$pid")")" >> "$W/trio.$s"
      else
        DUR=$SDUR wrk_run "$url" "$hdr" >> "$W/trio.$s"
      fi
    done
  done
  med() { cut -d' ' -f"$2" "$W/trio.$1" | median; } # server field(1 rps, 2 p99, 3 CPU us/request)
  local ar ap lr lp tr tp tc or op oc nr np fr fp
  ar=$(med A 1); ap=$(med A 2); lr=$(med L 1); lp=$(med L 2); tr=$(med T 1); tp=$(med T 2); or=$(med O 1); op=$(med O 2); nr=$(med N 1); np=$(med N 2); fr=$(med F 1); fp=$(med F 2)
  tc=$(med T 3); oc=$(med O 3)
  row "$1 req/s" "$(printf '%.0f' "$ar")" "$(printf '%.0f' "$nr")" "$(ratio "$ar" "$nr")" ">= 0.9x"
  row "$1 p99 ms (lower is better)" "$ap" "$np" "$(ratio "$np" "$ap")" ">= 1.0x"
  row "  with an access file: req/s, p99 ms vs without" "$(printf '%.0f' "$tr") / $tp" "$(printf '%.0f' "$ar") / $ap" "$(ratio "$tr" "$ar")" ">= 0.95x"
  row "  login token vs access-file token: req/s, p99" "$(printf '%.0f' "$or") / $op" "$(printf '%.0f' "$tr") / $tp" "$(ratio "$or" "$tr")" ">= 0.95x"
  row "    serve CPU us/request (lower is better)" "$oc" "$tc" "$(ratio "$tc" "$oc")" ">= 0.95x"
  row "  net/http floor: req/s ratio, p99 ms" "$(printf '%.0f' "$fr") / $fp" "$(printf '%.0f' "$nr") / $np" "$(ratio "$fr" "$nr")" ""
  row "  airgap vs the net/http floor, req/s" "$(printf '%.0f' "$ar")" "$(printf '%.0f' "$fr") (floor)" "$(ratio "$ar" "$fr")" ">= 0.95x"
  row "  access lines on (default) vs warn, req/s, p99" "$(printf '%.0f' "$lr") / $lp" "$(printf '%.0f' "$ar") / $ap" "$(ratio "$lr" "$ar")" ">= 0.9x"
}
trio "mirror index.json" /mirror/registry.terraform.io/hashicorp/random/index.json /registry.terraform.io/hashicorp/random/index.json
trio "mirror <version>.json" /mirror/registry.terraform.io/hashicorp/random/3.6.0.json /registry.terraform.io/hashicorp/random/3.6.0.json
trio "registry versions" /v1/providers/hashicorp/random/versions /v1/providers/hashicorp/random/versions
trio "registry download" /v1/providers/hashicorp/random/3.6.0/download/linux/amd64 /v1/providers/hashicorp/random/3.6.0/download/linux/amd64

# Package downloads with and without counting: wrk on the 64 KiB package
# (every request a whole download, counted), airgap as shipped (A) and
# with usage off (U) taking turns, median of 2 x $ROUNDS runs each (the
# difference sought is small, single runs move by 25 %). Besides
# req/s and p99, the server's own CPU time per download (utime + stime
# from /proc over the run, divided by the requests wrk completed), which a
# busy machine moves far less than throughput.
countpair() { # label path
  local r s url pid t0 t1 ar ap ac ur up uc
  : > "$W/pair.A"; : > "$W/pair.U"
  for ((r = 0; r < 2 * ROUNDS; r++)); do
    for s in A U; do
      if ((r % 2)); then s=$([ "$s" = A ] && echo U || echo A); fi
      case $s in A) url="$A$2"; pid=$A_PID ;; U) url="$U$2"; pid=$U_PID ;; esac
      t0=$(cpu_ticks "$pid")
      DUR=$SDUR wrk_run "$url" > "$W/pair.run"
      t1=$(cpu_ticks "$pid")
      echo "$(cat "$W/pair.run") $(awk -v t="$((t1 - t0))" -v hz="$TCK" '/requests in/ { printf "%.1f", t / hz * 1e6 / $1 }' "$W/wrk.out")" >> "$W/pair.$s"
    done
  done
  ar=$(cut -d' ' -f1 "$W/pair.A" | median); ap=$(cut -d' ' -f2 "$W/pair.A" | median); ac=$(cut -d' ' -f3 "$W/pair.A" | median)
  ur=$(cut -d' ' -f1 "$W/pair.U" | median); up=$(cut -d' ' -f2 "$W/pair.U" | median); uc=$(cut -d' ' -f3 "$W/pair.U" | median)
  row "$1 req/s, counting on vs off" "$(printf '%.0f' "$ar")" "$(printf '%.0f' "$ur")" "$(ratio "$ar" "$ur")" ">= 0.95x"
  row "  p99 ms, counting on vs off (lower is better)" "$ap" "$up" "$(ratio "$up" "$ap")" ""
  row "  serve CPU us per download, on vs off (lower is better)" "$ac" "$uc" "$(ratio "$uc" "$ac")" ">= 0.95x"
}
countpair "package download 64 KiB" "$BIG_SMALL_BLOB"

speed() { # url -> best of 3, MiB/s
  best=0
  for _ in 1 2 3; do
    s=$(curl -s --cacert "$CA" -o /dev/null -w '%{speed_download}' "$1")
    best=$(awk -v a="$s" -v b="$best" 'BEGIN { print (a > b) ? a : b }')
  done
  awk -v s="$best" 'BEGIN { printf "%.0f", s / 1048576 }'
}
t0=$(cpu_ticks "$A_PID"); as=$(speed "$A$BIG_BLOB"); ac=$(( $(cpu_ticks "$A_PID") - t0 ))
ns=$(speed "$N$BIG_MIRROR")
row "package download $((BIG>>20)) MiB, MiB/s" "$as" "$ns" "$(ratio "$as" "$ns")" ">= 0.9x"
t0=$(cpu_ticks "$U_PID"); us=$(speed "$U$BIG_BLOB"); uc=$(( $(cpu_ticks "$U_PID") - t0 ))
row "  counting on vs off, MiB/s" "$as" "$us" "$(ratio "$as" "$us")" ">= 0.95x"
# CPU seconds of the server per GiB sent (three downloads each).
cpg() { awk -v t="$1" -v hz="$TCK" -v b="$BIG" 'BEGIN { printf "%.2f", t / hz / (3 * b / 1073741824) }'; }
row "  serve CPU s per GiB, on vs off (lower is better)" "$(cpg "$ac")" "$(cpg "$uc")" "$(ratio "$(cpg "$uc")" "$(cpg "$ac")")" ">= 0.95x"
# The counts A, L and T wrote (every 10 s, and as they stop): a check
# that counting ran, not a figure.
sleep 11
echo "downloads counted (airgap inventory --usage):"
"$AG" inventory --store "$W/srv/store" --usage | grep -A4 'hashicorp/random' || true
kill "$(cat "$W/nginx.pid")"; rm -f "$W/nginx.pid"
fi

# ---------------------------------------------------------------- 3: export
if on export; then
export_bench() { # label rate
  echo "== 3: export $EXP_N providers x 3 platforms x $((EXP_SIZE>>20)) MiB, $1 (airgap export vs terraform providers mirror)"
  rm -rf "$W/world" "$W/export-cache" "$W/tf-mirror" "$W"/export*.bundle
  "$BT" world -dir "$W/world" -n "$EXP_N" -size "$EXP_SIZE" -rate "$2" > "$W/world.log" 2>&1 &
  local wpid=$!
  for _ in $(seq 1 600); do grep -q ready "$W/world.log" 2>/dev/null && break; sleep 0.1; done
  grep -q ready "$W/world.log"
  mapfile -t WENV < "$W/world/env"
  local t0 t_ag t_tf t_ag2
  t0=$(now)
  env "${WENV[@]}" TF_CLI_CONFIG_FILE="$W/empty.tfrc" "$AG" export --manifest "$W/world/airgap.hcl" --sign-key "$W/keys/site.key.asc" \
    --out "$W/export.bundle" --cache "$W/export-cache" --compression none > "$W/export.log" 2>&1
  t_ag=$(elapsed "$t0" "$(now)")
  t0=$(now)
  (cd "$W/world/tf" && env "${WENV[@]}" TF_CLI_CONFIG_FILE="$W/empty.tfrc" CHECKPOINT_DISABLE=1 terraform providers mirror \
    -platform=linux_amd64 -platform=darwin_arm64 -platform=windows_amd64 "$W/tf-mirror" > "$W/tfmirror.log" 2>&1)
  t_tf=$(elapsed "$t0" "$(now)")
  row "export wall s, $1 (lower is better)" "$t_ag" "$t_tf" "$(ratio "$t_tf" "$t_ag")" ">= 3x"
  t0=$(now)
  env "${WENV[@]}" TF_CLI_CONFIG_FILE="$W/empty.tfrc" "$AG" export --manifest "$W/world/airgap.hcl" --sign-key "$W/keys/site.key.asc" \
    --out "$W/export2.bundle" --cache "$W/export-cache" --compression none > /dev/null 2>&1
  t_ag2=$(elapsed "$t0" "$(now)")
  row "  again with a warm cache, wall s" "$t_ag2" "$t_tf" "$(ratio "$t_tf" "$t_ag2")" ""
  if [ "$2" = 0 ]; then
    # Issue 6's figure: a delta adding one provider version to the base.
    env "${WENV[@]}" TF_CLI_CONFIG_FILE="$W/empty.tfrc" "$AG" export --manifest "$W/world/airgap-next.hcl" --sign-key "$W/keys/site.key.asc" \
      --out "$W/delta.bundle" --cache "$W/export-cache" --compression none --since "$W/export.bundle" > /dev/null 2>&1
    local base delta pk
    base=$(stat -c %s "$W/export.bundle"); delta=$(stat -c %s "$W/delta.bundle"); pk=$(cat "$W/world/next-bytes")
    row "delta +1 provider version on a $((base>>20)) MiB base, KiB" "$((delta>>10))" "$((pk>>10)) (pkgs)" "$(ratio "$pk" "$delta")" "<= pkgs+manifest"
  fi
  kill "$wpid" 2>/dev/null || true
  wait "$wpid" 2>/dev/null || true
}
export_bench "loopback speed" 0
export_bench "25 MiB/s per download" $((25<<20))
fi

# ---------------------------------------------------------------- 4: a real site
if on site; then
# Provider zips shaped like the big real ones (a real Go plugin binary as
# compressible as the AWS provider's, deflated as goreleaser does, ~180 MB
# each, versions x 5 platforms of four providers) and modules, through
# every step at the gap, each against what the same bytes cost plainly,
# measured in the same run: export (cold, against terraform providers
# mirror; warm, against cp + sync of the cache's bytes), verify (against
# sha256sum of the bundle), import (against tar -x + sha256sum) and the
# export from the store to the next network (against cp + sync of the
# store's blobs), with airgap's default flags.
echo "== 4: a real site (benchtool site: $((SITE_BYTES>>20)) MiB of provider packages and $SITE_MODULES modules)"
"$BT" site -dir "$W/site" -cache "$CACHE" -bytes "$SITE_BYTES" -unpacked "$SITE_UNPACKED" -modules "$SITE_MODULES" > "$W/site.log" 2>&1 &
SITEPID=$!; PIDS+=($SITEPID)
for _ in $(seq 1 3000); do grep -q '^ready' "$W/site.log" 2>/dev/null && break; kill -0 $SITEPID 2>/dev/null || break; sleep 0.2; done
grep -q '^ready' "$W/site.log" || { cat "$W/site.log" >&2; echo "the real-site fixture did not start" >&2; exit 1; }
grep -v '^ready' "$W/site.log"
mapfile -t SENV < "$W/site/env"
SK="$W/keys/site.key.asc"; SP="$W/keys/site.pub.asc"
site_export() { # out -> "wall_s peak_kib"
  env "${SENV[@]}" TF_CLI_CONFIG_FILE="$W/empty.tfrc" /usr/bin/time -f "%e %M" -o "$W/time-export.out" "$AG" export --manifest "$W/site/airgap.hcl" --sign-key "$SK" \
    --out "$1" --cache "$W/site-cache" > "$W/site-export.log" 2>&1 || { cat "$W/site-export.log" >&2; exit 1; }
  cat "$W/time-export.out"
}
mib() { awk -v m="$1" 'BEGIN { printf "%.0f", m / 1024 }'; }
sync
read -r t_ag m_ag <<<"$(site_export "$W/site1.bundle")"
# Only its size is kept (disk: terraform's mirror takes its place).
bsize=$(stat -c %s "$W/site1.bundle")
rm -f "$W/site1.bundle"
plat_flags=(); for p in darwin_amd64 darwin_arm64 linux_amd64 linux_arm64 windows_amd64; do plat_flags+=("-platform=$p"); done
sync
t0=$(now)
for d in "$W"/site/tf/v*; do # one configuration per version round: each selects one version of each provider
  (cd "$d" && env "${SENV[@]}" TF_CLI_CONFIG_FILE="$W/empty.tfrc" CHECKPOINT_DISABLE=1 terraform providers mirror "${plat_flags[@]}" "$W/site-tfmirror" > "$W/site-tf.log" 2>&1) ||
    { cat "$W/site-tf.log" >&2; exit 1; }
done
t_tf=$(elapsed "$t0" "$(now)")
rm -rf "$W/site-tfmirror"
row "real site: $(cat "$W/site/summary"), MiB" "$((bsize>>20))" "" "" ""
row "  cold export at loopback, wall s" "$t_ag" "$t_tf (tf)" "$(ratio "$t_tf" "$t_ag")" ">= 1.0x"
row "  cold export peak RSS MiB" "$(mib "$m_ag")" "" "" "<= 100"

# Warm: every package in the cache. Floor: copying the cache's bytes and
# syncing them.
sync
t0=$(now); cp -r "$W/site-cache/blobs" "$W/site-cp" && sync; t_cp=$(elapsed "$t0" "$(now)")
rm -rf "$W/site-cp"; sync
read -r t_warm m_warm <<<"$(site_export "$W/site.bundle")"
# Target: <= 2x cp + sync at 1 GiB, <= 1.0x at 10 GiB (ratio >= 0.5x, >= 1.0x).
row "  warm re-export, wall s" "$t_warm" "$t_cp (cp+sync)" "$(ratio "$t_cp" "$t_warm")" "$([ "$SITE_BYTES" -ge $((8<<30)) ] && echo '>= 1.0x' || echo '>= 0.5x')"
row "  warm re-export peak RSS MiB" "$(mib "$m_warm")" "" "" "<= 100"

# The size with auto (the default) against today's zstd: the same tar
# stream through the one-frame zstd writer, counted, not written.
zsize=$("$BT" zstdsize -dir "$W/zs" -bundle "$W/site.bundle" -key "$SK")
row "  bundle bytes, auto (default) vs zstd" "$bsize" "$zsize (zstd)" "$(ratio "$zsize" "$bsize")" ">= 0.99x"

# What the SBOM costs the biggest bundle of the bench: reading each plugin's
# Go build information in the h1 pass (over the h1 alone) and building the
# SBOM, measured on one core on the site's packages, against the wall time
# of the cold export (a warm one reads both from the cache) and of verify
# (below), which both do it on every core: the share is an upper bound.
# Measured here, so that the download cache can go before the store is
# filled (disk).
read -r extra npk <<<"$(sbom_cost "$W/site.bundle" "$SP" "$W/site-cache/blobs/sha256" "$SITE_SBOM_SAMPLE")"

# The exports are done: the stand-in registry, its files and the download
# cache go (disk).
kill "$SITEPID" 2>/dev/null || true
wait "$SITEPID" 2>/dev/null || true
rm -rf "$W/site" "$W/site-cache" "$W/sbomcost"

# verify: every check on (h1 unpacks every zip). Floor: sha256sum.
sync
/usr/bin/time -f "%e %M" -o "$W/time.out" "$AG" verify --keyring "$SP" "$W/site.bundle" > "$W/site-verify.log" 2>&1 ||
  { cat "$W/site-verify.log" >&2; exit 1; }
read -r t_v m_v < "$W/time.out"
t0=$(now); sha256sum "$W/site.bundle" > /dev/null; t_sha=$(elapsed "$t0" "$(now)")
row "  verify, wall s" "$t_v" "$t_sha (sha256sum)" "$(ratio "$t_sha" "$t_v")" ">= 0.83x"
row "  verify peak RSS MiB" "$(mib "$m_v")" "" "" "<= 64"

# import into an empty store (fsync of every blob and the index). Floor:
# tar -x of the bundle (zstd -d first: it is a zstd stream) + sha256sum.
sync
/usr/bin/time -f "%e %M" -o "$W/time.out" "$AG" import --keyring "$SP" --store "$W/site-store" "$W/site.bundle" > "$W/site-import.log" 2>&1 ||
  { cat "$W/site-import.log" >&2; exit 1; }
read -r t_i m_i < "$W/time.out"

# The next network: export --from-store of the store just filled (every
# blob hashed as it is copied into the bundle, one read of the store).
# Floor: cp of the store's blobs + sync.
sync
/usr/bin/time -f "%e %M" -o "$W/time.out" "$AG" export --from-store "$W/site-store" --sign-key "$SK" --out "$W/site-next.bundle" --json > "$W/site-next.json" 2> "$W/site-next.log" ||
  { cat "$W/site-next.log" >&2; exit 1; }
read -r t_fs m_fs < "$W/time.out"
rm -f "$W/site-next.bundle"; sync

# The floor of verify and import (the same work with standard tools):
# sha256sum of every blob plus unzip -p of every zip (each provider
# package inflated, as the h1 check does) to /dev/null, one blob per job
# on every core (xargs -P), over the blobs the store just took from the
# bundle. Like verify and import it starts from what the page cache
# holds after the steps before (the store was just written).
nproc_all=$(nproc)
t0=$(now)
find "$W/site-store/blobs" -type f -print0 | xargs -0 -r -n 1 -P "$nproc_all" sh -c '
  sha256sum "$1" > /dev/null
  [ "$(head -c 2 "$1")" = PK ] && unzip -p "$1" > /dev/null
  exit 0' sh
t_std=$(elapsed "$t0" "$(now)")
t0=$(now); cp -r "$W/site-store/blobs" "$W/site-cp" && sync; t_cp2=$(elapsed "$t0" "$(now)")
chmod -R u+w "$W/site-cp"; rm -rf "$W/site-cp"; sync
chmod -R u+w "$W/site-store"; rm -rf "$W/site-store"; sync
mkdir -p "$W/site-x"
t0=$(now); zstd -dcq "$W/site.bundle" | tar -x -C "$W/site-x" && sha256sum "$W/site-x"/blobs/sha256/* > /dev/null; t_tar=$(elapsed "$t0" "$(now)")
rm -rf "$W/site-x"
row "  import, wall s" "$t_i" "$t_tar (tar+sha)" "$(ratio "$t_tar" "$t_i")" ">= 1.0x"
row "  import peak RSS MiB" "$(mib "$m_i")" "" "" "<= 64"
row "  verify vs the same work by standard tools, s" "$t_v" "$t_std (sha+unzip -P$nproc_all)" "$(ratio "$t_std" "$t_v")" ">= 0.83x"
row "  import vs the same work by standard tools, s" "$t_i" "$t_std (sha+unzip -P$nproc_all)" "$(ratio "$t_std" "$t_i")" ">= 0.83x"
row "  export --from-store (next network), wall s" "$t_fs" "$t_cp2 (cp+sync)" "$(ratio "$t_cp2" "$t_fs")" ">= 0.67x"
row "  export --from-store peak RSS MiB" "$(mib "$m_fs")" "" "" "<= 100"

row "  build info + SBOM in cold export, $npk pkgs, s (%)" "$extra" "$t_ag (export)" "$(pct "$extra" "$t_ag")" "<= 5%"
row "  build info + SBOM in verify, s (% of wall)" "$extra" "$t_v (verify)" "$(pct "$extra" "$t_v")" "<= 5%"
kill "$SITEPID" 2>/dev/null || true
wait "$SITEPID" 2>/dev/null || true
rm -rf "$W/site" "$W/site-cache" "$W/site.bundle" "$W/zs"
fi

# ---------------------------------------------------------------- 5: scale
if on scale; then
echo "== 5: start-up and metadata with a synthetic catalog of $SYN packages"
"$BT" synthetic -dir "$W/syn" -n "$SYN" > "$W/syn.log"
t0=$(now)
"$AG" serve --store "$W/syn/store" --listen 127.0.0.1:18445 --tls files --cert "$CERT" --key "$KEY" --log-level warn 2>"$W/serve2.log" &
SPID=$!; PIDS+=($SPID)
wait_https "https://127.0.0.1:18445/healthz" "$CA"
t_start=$(elapsed "$t0" "$(now)")
curl -fsS --cacert "$CA" -o /dev/null "https://127.0.0.1:18445/v1/providers/bench/p0000/versions"  # builds the lookup view
rss=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$SPID/status")
row "start-up to first answer s, $SYN packages" "$t_start" "" "" "<= 1"
row "serve RSS MiB, $SYN packages" "$rss" "" "" ""
read -r sr sp <<<"$(wrk_run "https://127.0.0.1:18445/v1/providers/bench/p0007/versions")"
row "versions req/s / p99 ms at $SYN packages" "$(printf '%.0f' "$sr") / $sp" "" "" ""
kill "$SPID"
fi

# ---------------------------------------------------------------- 6: bucket
if on bucket; then
# The store in a bucket of a real S3 server that checks signatures
# (versitygw, the one the test suite runs, built into the tool cache the
# way the suite builds it), against what a site would otherwise do with the
# same server: GET the object from it, upload with the AWS SDK's own
# upload manager, and serve from a directory.
VGW_VERSION=$(sed -n 's/^const VersitygwVersion = "\([^"]*\)".*/\1/p' testdata/e2e/harness/s3.go)
VGW=${AIRGAP_TEST_CACHE:-$HOME/.cache/airgap}/versitygw-$VGW_VERSION
if [ ! -x "$VGW" ]; then
  echo "building versitygw $VGW_VERSION into $(dirname "$VGW") (once; a few minutes)"
  mkdir -p "$W/gobin" "$(dirname "$VGW")"
  (cd "$W" && GOFLAGS= GOBIN="$W/gobin" go install -trimpath "github.com/versity/versitygw/cmd/versitygw@v$VGW_VERSION")
  mv "$W/gobin/versitygw" "$VGW"
fi
echo "== 6: the store in a bucket (versitygw $VGW_VERSION, posix backend, over TLS with the bench certificate)"
export AWS_ACCESS_KEY_ID=AGbench AWS_SECRET_ACCESS_KEY=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n') AWS_REGION=us-east-1 \
  AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true AWS_CA_BUNDLE="$CA"
mkdir -p "$W/s3"
# One server, TLS only: the direct GET and serve's own requests both go
# to it over TLS (serve trusts the bench CA through AWS_CA_BUNDLE), so
# both clients' downloads are on the same footing. A second versitygw
# over the same directory answers plain HTTP, for the row with serve
# reaching the bucket over plain HTTP (a bucket on a trusted network).
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY "$VGW" --port 127.0.0.1:18461 --cert "$CERT" --key "$KEY" --quiet posix "$W/s3" > "$W/vgw.log" 2>&1 &
PIDS+=($!); VGW_PID=$!
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY "$VGW" --port 127.0.0.1:18462 --quiet posix "$W/s3" > "$W/vgw-plain.log" 2>&1 &
PIDS+=($!)
S3=https://127.0.0.1:18461; S3P=http://127.0.0.1:18462
for _ in $(seq 1 200); do curl -fsS --cacert "$CA" -o /dev/null "$S3/" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
  --aws-sigv4 aws:amz:us-east-1:s3 --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" 2>/dev/null && break; sleep 0.05; done
"$BT" s3 -dir "$W/bt-s3" -op mkbucket -endpoint "$S3" -bucket bench
saddr() { echo "s3://bench/$1?endpoint=$2&use_path_style=true"; }
"$AG" store copy "$W/srv/store" "$(saddr site "$S3")" > /dev/null
# B: serve from the bucket over TLS, BP: over plain HTTP, D: from the
# directory the bucket was copied from. Each at its defaults.
"$AG" serve --store "$(saddr site "$S3")" --listen 127.0.0.1:18463 --tls files --cert "$CERT" --key "$KEY" --log-level warn 2>"$W/serve-bucket.log" &
PIDS+=($!); B_PID=$!
"$AG" serve --store "$(saddr site "$S3P")" --listen 127.0.0.1:18464 --tls files --cert "$CERT" --key "$KEY" --log-level warn 2>"$W/serve-bucket-plain.log" &
PIDS+=($!); BP_PID=$!
"$AG" serve --store "$W/srv/store" --listen 127.0.0.1:18465 --tls files --cert "$CERT" --key "$KEY" --log-level warn 2>"$W/serve-dir.log" &
PIDS+=($!); D_PID=$!
B=https://127.0.0.1:18463; BP=https://127.0.0.1:18464; D=https://127.0.0.1:18465
wait_https "$B/healthz" "$CA"; wait_https "$BP/healthz" "$CA"; wait_https "$D/healthz" "$CA"
S3GET=(--aws-sigv4 aws:amz:us-east-1:s3 --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')
OBJ=/bench/site/blobs/sha256/${BIG_BLOB#/blobs/sha256/}; OBJ=${OBJ%/*}
# The same bytes from both: a mismatch here would make the row meaningless.
[ "$(curl -fsS --cacert "$CA" "$B$BIG_BLOB" | sha256sum)" = "$(curl -fsS --cacert "$CA" "${S3GET[@]}" "$S3$OBJ" | sha256sum)" ] ||
  { echo "the replica and the S3 server do not send the same bytes" >&2; exit 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)
# MiB/s of one download, median of 2 x ROUNDS, the servers taking turns
# (the best of them favoured whichever moved most on the shared machine).
dl_speed() { curl -s --cacert "$CA" -o /dev/null -w '%{speed_download}' "$@"; }
mibs() { median | awk '{ printf "%.0f", $1 / 1048576 }'; }
: > "$W/dl.B"; : > "$W/dl.S"; : > "$W/dl.BP"
t0=$(cpu_ticks "$B_PID")
for ((r = 0; r < 2 * ROUNDS; r++)); do
  dl_speed "$B$BIG_BLOB" >> "$W/dl.B"; echo >> "$W/dl.B"
  dl_speed "${S3GET[@]}" "$S3$OBJ" >> "$W/dl.S"; echo >> "$W/dl.S"
  dl_speed "$BP$BIG_BLOB" >> "$W/dl.BP"; echo >> "$W/dl.BP"
done
bc_=$(( $(cpu_ticks "$B_PID") - t0 ))
bs=$(mibs < "$W/dl.B"); ss=$(mibs < "$W/dl.S"); bps=$(mibs < "$W/dl.BP")
t0=$(cpu_ticks "$D_PID"); for ((r = 0; r < 2 * ROUNDS; r++)); do dl_speed "$D$BIG_BLOB" > /dev/null; done; dc=$(( $(cpu_ticks "$D_PID") - t0 ))
row "bucket: download $((BIG>>20)) MiB, serve vs S3 GET, MiB/s" "$bs" "$ss (S3 GET)" "$(ratio "$bs" "$ss")" ">= 0.9x"
row "  serve reading the bucket over plain HTTP, MiB/s" "$bps" "$ss (S3 GET)" "$(ratio "$bps" "$ss")" ""
# CPU seconds of serve per GiB sent: hashing what it streams from the
# bucket, against sending a file of its own directory.
cpg2() { awk -v t="$1" -v hz="$TCK" -v b="$BIG" -v n="$((2 * ROUNDS))" 'BEGIN { printf "%.2f", t / hz / (n * b / 1073741824) }'; }
row "  serve CPU s/GiB, bucket vs dir (lower is better)" "$(cpg2 "$bc_")" "$(cpg2 "$dc")" "$(ratio "$(cpg2 "$dc")" "$(cpg2 "$bc_")")" ""

# Cached metadata: the same answers from serve over the bucket (B) and
# over the directory (D), wrk taking turns, median of ROUNDS runs each.
bucket_meta() { # label path
  local r s; : > "$W/meta.B"; : > "$W/meta.D"
  for ((r = 0; r < ROUNDS; r++)); do
    for s in $( ((r % 2)) && echo "D B" || echo "B D"); do
      case $s in B) DUR=$SDUR wrk_run "$B$2" >> "$W/meta.B" ;; D) DUR=$SDUR wrk_run "$D$2" >> "$W/meta.D" ;; esac
    done
  done
  local br bp dr dp
  br=$(cut -d' ' -f1 "$W/meta.B" | median); bp=$(cut -d' ' -f2 "$W/meta.B" | median)
  dr=$(cut -d' ' -f1 "$W/meta.D" | median); dp=$(cut -d' ' -f2 "$W/meta.D" | median)
  row "bucket: $1 req/s, p99 ms vs dir" "$(printf '%.0f' "$br") / $bp" "$(printf '%.0f' "$dr") / $dp" "$(ratio "$br" "$dr")" ">= 0.95x"
}
bucket_meta "registry versions" /v1/providers/hashicorp/random/versions
bucket_meta "registry download" /v1/providers/hashicorp/random/3.6.0/download/linux/amd64
row "  serve peak RSS MiB, bucket vs dir" "$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$B_PID/status")" \
  "$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$D_PID/status") (dir)" "" ""
kill "$B_PID" "$BP_PID" "$D_PID" 2>/dev/null || true

# Import: a site of about 1 GiB (benchtool site, exported by airgap) into
# a new prefix of the bucket, against uploading the same bundle file to
# the same server with the SDK's upload manager at its defaults, and
# against importing it into a directory (every check the same: the
# difference is what the bucket costs).
"$BT" site -dir "$W/bsite" -cache "$CACHE" -bytes "$BSITE_BYTES" -unpacked "$BSITE_UNPACKED" -modules 4 > "$W/bsite.log" 2>&1 &
BSITEPID=$!; PIDS+=($BSITEPID)
for _ in $(seq 1 3000); do grep -q '^ready' "$W/bsite.log" 2>/dev/null && break; kill -0 $BSITEPID 2>/dev/null || break; sleep 0.2; done
grep -q '^ready' "$W/bsite.log" || { cat "$W/bsite.log" >&2; echo "the bucket section's site fixture did not start" >&2; exit 1; }
mapfile -t BENV < "$W/bsite/env"
env "${BENV[@]}" TF_CLI_CONFIG_FILE="$W/empty.tfrc" "$AG" export --manifest "$W/bsite/airgap.hcl" --sign-key "$W/keys/site.key.asc" \
  --out "$W/bsite.bundle" --cache "$W/bsite-cache" > "$W/bsite-export.log" 2>&1 || { cat "$W/bsite-export.log" >&2; exit 1; }
kill "$BSITEPID" 2>/dev/null || true; wait "$BSITEPID" 2>/dev/null || true
rm -rf "$W/bsite" "$W/bsite-cache"
cat "$W/bsite.bundle" > /dev/null # both start from the page cache
/usr/bin/time -f "%e %M" -o "$W/time.out" "$AG" import --keyring "$W/keys/site.pub.asc" --store "$(saddr imported "$S3")" "$W/bsite.bundle" > "$W/bimport.log" 2>&1 ||
  { cat "$W/bimport.log" >&2; exit 1; }
read -r t_bi m_bi < "$W/time.out"
t_up=$("$BT" s3 -dir "$W/bt-s3" -op upload -endpoint "$S3" -bucket bench -key-name uploaded/bsite.bundle -file "$W/bsite.bundle")
/usr/bin/time -f "%e %M" -o "$W/time.out" "$AG" import --keyring "$W/keys/site.pub.asc" --store "$W/bstore" "$W/bsite.bundle" > "$W/bimport-dir.log" 2>&1 ||
  { cat "$W/bimport-dir.log" >&2; exit 1; }
read -r t_di _ < "$W/time.out"
bsz=$(stat -c %s "$W/bsite.bundle")
row "bucket: import $((bsz>>20)) MiB site vs SDK upload, s" "$t_bi" "$t_up (SDK)" "$(ratio "$t_up" "$t_bi")" ">= 0.67x"
row "  import, bucket vs directory, wall s" "$t_bi" "$t_di (dir)" "$(ratio "$t_di" "$t_bi")" ""
row "  import into the bucket, peak RSS MiB" "$(awk -v m="$m_bi" 'BEGIN { printf "%.0f", m / 1024 }')" "" "" "<= 64"
chmod -R u+w "$W/bstore" 2>/dev/null || true
rm -rf "$W/bstore" "$W/bsite.bundle" "$W/s3"
unset AWS_CA_BUNDLE
fi

echo
echo "== results ($(date -u +%Y-%m-%dT%H:%MZ); ratios > 1 favour airgap)"
cat "$TABLE"
