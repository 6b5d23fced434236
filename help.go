package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/server"
)

// verbHelp is what 'airgap help VERB' prints besides the flags.
type verbHelp struct {
	usage    string   // arguments after the verb
	about    string   // what it does, two lines
	env      []string // environment variables it reads
	examples []string
}

// verbExits are the exit codes a verb has besides exitCodes.
var verbExits = map[string]string{
	"verify": "  0    verified; with --against, and the import will accept it\n" +
		"  3    verified, but something needs attention (--strict only; without it: 0)\n" +
		"  4    verified, but the import will refuse it (--against's forecast; with or without --strict)\n" +
		"  (1: a bundle that did not verify: nothing about it can be trusted)\n",
	"approve": "  0    verified, and the approval was written\n" +
		"  4    verified, but the import would refuse the bundle even with this approval: nothing was written\n" +
		"  (1: a bundle that did not verify, or an approval that could not be made: nothing was written)\n",
}

var helps = map[string]verbHelp{
	"keygen": {"--out PREFIX [--name \"NAME <EMAIL>\"] [--no-passphrase]",
		"Creates the site's OpenPGP signing key (RSA): PREFIX.key.asc stays on the connected\nside and signs bundles; PREFIX.pub.asc goes into the offline side's keyring.",
		[]string{"AIRGAP_PASSPHRASE  passphrase for the private key when there is no terminal"},
		[]string{"airgap keygen --out keys/site --name \"Site Ops <ops@site.example>\"",
			"AIRGAP_PASSPHRASE=$(cat pass.txt) airgap keygen --out keys/site   # no terminal",
			"airgap keygen --out keys/test --no-passphrase                    # unprotected, for tests"}},
	"keys": {"generate --out PREFIX | retire --store DIR NAMESPACE FINGERPRINT | revoke --store DIR --keyring REVOCATION.asc",
		"generate: a signing key, as keygen (a site key, or a transfer station's key for 'airgap approve').\n" +
			"retire: the store's publisher key for a namespace signs nothing new there from now on (what\nit serves signed by the key stays); recorded in the store's history.\n" +
			"revoke: the store remembers a key's revocation (the key as 'gpg --export' writes it revoked):\n" +
			"it signs nothing new, and nothing dated at or after the revocation, even when a later bundle\ncarries the key with its revocation stripped. Imports remember revocations their bundles carry.",
		[]string{"AIRGAP_PASSPHRASE  generate: passphrase for the private key when there is no terminal"},
		[]string{"airgap keys generate --out keys/station --name \"Transfer station 1 <station1@site.example>\"",
			"airgap keys retire --store /srv/airgap registry.terraform.io/hashicorp '3436 5D94 72D7 468F …' --reason 'replaced in 2021'",
			"airgap keys revoke --store /srv/airgap --keyring old-publisher-revoked.asc"}},
	"approve": {"--key STATION.key.asc --keyring SITE.pub.asc [--against INVENTORY.json] [--accept-publisher-key FINGERPRINT]... [--note TEXT] BUNDLE",
		"The transfer station's signed approval (the two-person rule): runs the whole verify (the\n" +
			"review is printed as verify prints it; --json as verify --json) and, only if the bundle\n" +
			"verifies and — with --against — the store's import would accept it with this approval,\n" +
			"writes BUNDLE.approval (a split set: NAME.approval beside NAME.000; BUNDLE.2.approval if\n" +
			"taken), atomically: a statement binding the bundle's manifest digest, the station key, the\n" +
			"time, the digests of the review printed (text and JSON), the note and the publisher keys\n" +
			"approved here, signed by the station key. A store whose import.hcl has an approvals block\n" +
			"requires such approvals; with publisher_key_approvals = \"station\" new publisher keys are\n" +
			"approved only here. The station key may not be a key of --keyring, nor the bundle's signer.",
		[]string{"AIRGAP_PASSPHRASE  passphrase of --key when there is no terminal"},
		[]string{"airgap approve --key keys/station.key.asc --keyring site.pub.asc --against have.json site.bundle",
			"airgap approve --key keys/station.key.asc --keyring site.pub.asc --against have.json \\\n      --accept-publisher-key 'A6FD D72B E722 31CC 1407  5D12 B625 A360 C497 4D6F' --note 'CHG-1234: key checked with the publisher' site.bundle",
			"airgap approve --key keys/station.key.asc --keyring site.pub.asc --against have.json --json site.bundle.001 > review.json"}},
	"export": {"(--manifest FILE | --from DIR) --sign-key KEY --out BUNDLE [flags]\n       airgap export --from-store STORE [--manifest FILE | --from DIR | ADDRESS[@VERSION]...] --sign-key KEY --out BUNDLE [flags]",
		"Connected side: resolves providers and modules against their registries, downloads and\nverifies them against the publishers' signatures, and writes one signed bundle.\nModules' git::, GitHub and https:// archive sources are vendored into the calling\nmodule (--no-vendor keeps them as written; --allow-unvendored only warns about the\nones that cannot be vendored). The manifest's gate blocks run scanners over every module\nand provider plugin (an entry that fails one fails the export unless waived); the\nbundle carries their results and reports and a CycloneDX SBOM of everything in it.\nEach provider version's documentation (the docs/ folder of its repository at the\nversion's tag, within --max-docs-size) and each module's README, inputs and outputs\nare carried too; a provider whose docs cannot be fetched is exported without them\n(--no-docs, or docs = false in a provider block, leaves them out).\n\nWith --from-store, the offline side exports what a store holds for the next network,\nwith no network: everything, or what a manifest, a project or addresses name. The\nbundle carries the store's blobs byte for byte, its withdrawals and publisher-key\napprovals, and a chain of custody: every earlier bundle's signed manifest, which the\nnext enclave checks again. Every blob is hashed from the store before a byte is\nwritten. --since the last bundle sent makes a delta over a one-way link.",
		[]string{"AIRGAP_PASSPHRASE  passphrase of --sign-key when there is no terminal",
			"SOURCE_DATE_EPOCH  bundle timestamp (same inputs give a byte-identical bundle)",
			"TF_TOKEN_<host>, TF_CLI_CONFIG_FILE  the CLI configuration, as Terraform reads it: credentials,\n    credentials_helper, host blocks (proxy registries), provider_installation network mirrors",
			"TF_REGISTRY_CLIENT_TIMEOUT  seconds for registry metadata and a credentials helper's answer (default 10)",
			"TF_VAR_<name>  with --from: a root variable's value, as terraform init reads it",
			"HTTPS_PROXY, NO_PROXY  proxy for registry requests"},
		[]string{"airgap export --manifest airgap.hcl --dry-run --json",
			"airgap export --manifest airgap.hcl --sign-key keys/site.key.asc --out site.bundle",
			"airgap export --from ./infra --platform linux_amd64 --sign-key k.key.asc --out site.bundle --split dvd",
			"airgap export --manifest airgap.hcl --provider-mirror https://artifactory.corp/api/terraform/mirror/ --sign-key k.key.asc --out site.bundle",
			"airgap export --manifest airgap.hcl --allow-download-host github.com --sign-key k.key.asc --out site.bundle   # proxy registry + github.com",
			"airgap export --manifest airgap.hcl --sign-key k.key.asc --out site.bundle --accept-new-publisher-key FINGERPRINT",
			"airgap export --from ./infra --var-file prod.tfvars --var env=prod --dry-run   # module sources from const variables",
			"airgap export --manifest gated.hcl --sign-key k.key.asc --out site.bundle --gate-reports reports/ --gate-jobs 4",
			"airgap export --from-store /srv/airgap --sign-key enclave.key.asc --out next.bundle   # everything, for the next network",
			"airgap export --from-store /srv/airgap --since next.bundle --sign-key enclave.key.asc --out next-2.bundle   # a diode: what changed",
			"airgap export --from-store /srv/airgap hashicorp/aws@5.61.0 example/vpc/aws --sign-key enclave.key.asc --out some.bundle"}},
	"verify": {"--keyring FILE BUNDLE [--against INVENTORY.json] [--approval FILE]... [--publisher-pins FILE] [--sbom FILE] [--strict] [--json]",
		"For the transfer station: checks a bundle's signature, every blob's digest and what it says,\n" +
			"writing nothing (any part of a split set names the whole set) but what --sbom asks for, and\n" +
			"shows what it brings in: what needs attention first (new publisher keys, keys the import\n" +
			"would refuse, site re-signatures, keys expired since, gates failed but waived), then every\n" +
			"provider version (platforms, sha256s, the publisher key, its trust and signature date,\n" +
			"whether the key is new for the namespace, gate results), every module version (source,\n" +
			"commit, vendored rewrites, gate results), withdrawals, each namespace's keys, and the\n" +
			"SBOM. --against the offline store's 'airgap inventory --json' adds what the import would\n" +
			"add, find present, withdraw and which keys change, and forecasts the import: the store's\n" +
			"own rules (withdrawals, conflicts, key pins, retired and revoked keys, required gates,\n" +
			"publisher signatures and station approvals: BUNDLE.approval beside the bundle and\n" +
			"--approval count) run over the inventory, ending with \"import will accept\" or \"import\n" +
			"will refuse: …\" and every entry refused and why. --sbom writes the bundle's SBOM once it\n" +
			"is rebuilt from the bytes and found identical to the signed one. --json prints one\n" +
			"document (its schema: docs/transfer-station.md).",
		nil,
		[]string{"airgap verify --keyring site.pub.asc site.bundle",
			"airgap verify --keyring site.pub.asc --against have.json --publisher-pins pins.hcl site.bundle",
			"airgap verify --keyring site.pub.asc --json --strict site.bundle.001   # 3: needs attention",
			"airgap verify --keyring site.pub.asc --against have.json site.bundle   # 4: the import will refuse it",
			"airgap verify --keyring site.pub.asc --sbom site.cdx.json site.bundle"}},
	"show": {"--keyring FILE BUNDLE SUBJECT [ARGS] [--platform OS_ARCH] [--raw]",
		"For the transfer station: prints evidence a bundle carries, each piece checked against\n" +
			"the bundle's signature and the digest its signed manifest gives it before it is shown.\n" +
			"Subjects: report [ADDRESS@VERSION] [GATE]: the gate reports (without ADDRESS@VERSION, the\n" +
			"list: entry, gate, result, findings, digest); a SARIF report as a table (rule, level,\n" +
			"file:line, message), any other as escaped text; --raw prints one report's exact bytes.",
		nil,
		[]string{"airgap show --keyring site.pub.asc site.bundle report",
			"airgap show --keyring site.pub.asc site.bundle report hashicorp/random@3.6.0 trivy --platform linux_amd64",
			"airgap show --keyring site.pub.asc site.bundle report example/vpc/aws@1.0.0 trivy --raw > trivy.sarif"}},
	"import": {"--keyring FILE --store DIR BUNDLE [--approval FILE]... [--accept-publisher-key FINGERPRINT]... [--publisher-pins FILE] [--require-gate GATE]...",
		"Offline side: checks a bundle (or split set) and adds it to the content-addressed store,\n" +
			"all or nothing; a running 'airgap serve' picks it up within 2 s. Publisher keys are\n" +
			"pinned per namespace: the first key of a namespace is recorded (trust on first use), and\n" +
			"a provider signed by another key is refused unless the bundle declares it (export\n" +
			"--accept-new-publisher-key) or --accept-publisher-key names it. A pins file decides for\n" +
			"the namespaces it lists, from the first import on:\n" +
			"  namespace \"registry.terraform.io/hashicorp\" {\n" +
			"    keys = [\"C874 011F 0AB4 0511 0D02  1055 3436 5D94 72D7 468F\"]\n" +
			"  }\n" +
			"  unlisted = \"trust-on-first-use\"   # or \"refuse\": namespaces not listed are refused\n" +
			"--require-gate (and STORE/import.hcl: require_gate = [...]) refuses a bundle whose entries\n" +
			"lack a passing or waived result of a gate. STORE/import.hcl is the store's policy:\n" +
			"  require_gate = [\"modules:trivy\"]           require_publisher_signatures = true\n" +
			"  publisher_pins = \"pins.hcl\"                 publisher_key_approvals = \"station\"\n" +
			"  approvals {\n" +
			"    keyring  = \"stations.pub.asc\"   # the transfer stations' public keys\n" +
			"    required = 1                     # approvals by distinct keys, per bundle\n" +
			"  }\n" +
			"  chain {                            # a bundle exported from an offline store:\n" +
			"    keyring = \"upstream.pub.asc\"   # every hop of its chain signed by one of these\n" +
			"  }\n" +
			"An approval ('airgap approve') is read beside the bundle (BUNDLE.approval) or given with\n" +
			"--approval. A refused import names every entry refused and why; nothing changes.",
		nil,
		[]string{"airgap import --keyring site.pub.asc --store /srv/airgap site.bundle",
			"airgap import --keyring site.pub.asc --store /srv/airgap --require-publisher-signatures site.bundle",
			"airgap import --keyring site.pub.asc --store /srv/airgap --json site.bundle.001",
			"airgap import --keyring site.pub.asc --store /srv/airgap --accept-publisher-key 'ABCD 1234 …' site.bundle",
			"airgap import --keyring site.pub.asc --store /srv/airgap --approval station2.approval site.bundle",
			"airgap import --keyring site.pub.asc --store /srv/airgap --require-gate modules:trivy --require-gate providers:govulncheck site.bundle"}},
	"inventory": {"--store DIR [--json] [--sbom FILE] [--usage]",
		"Lists the provider and module versions a store serves (with their gate results and reports)\nand the bundles imported into it; --json is what 'airgap export --have' reads to make a\ndelta; --sbom writes a CycloneDX SBOM of everything the store serves; --usage lists instead\nhow often each version (and platform) was downloaded through 'airgap serve', and when last.",
		nil,
		[]string{"airgap inventory --store /srv/airgap", "airgap inventory --store /srv/airgap --json > have.json",
			"airgap inventory --store /srv/airgap --sbom store.cdx.json",
			"airgap inventory --store /srv/airgap --usage --json"}},
	"docs": {"--store DIR ADDRESS[@VERSION] [NAME]",
		"Prints documentation from a store, for engineers without a browser: with a provider\naddress, the pages of its newest documented version (or VERSION) by category, or with\nNAME one page (resources/s3_bucket, s3_bucket or aws_s3_bucket); with a module address,\nits README, inputs, outputs and required providers. Text from the bundle is escaped\nfor the terminal. The catalog page serves the same, rendered.",
		nil,
		[]string{"airgap docs --store /srv/airgap hashicorp/aws", "airgap docs --store /srv/airgap hashicorp/aws@5.80.0 s3_bucket | less",
			"airgap docs --store /srv/airgap terraform-aws-modules/vpc/aws@5.8.1"}},
	"serve": {"--store DIR [--listen ADDR] [--hostname NAME]... [--tls local|acme|files]",
		"Serves the store to unmodified terraform/tofu: service discovery, provider and module\nregistries and a network mirror, over TLS (a built-in CA by default).",
		[]string{"GOGC  Go's collector setting (default here 400)"}, // and serveEnv
		[]string{"airgap serve --store /srv/airgap --listen :8443 --hostname airgap.site.example",
			"airgap serve --store /srv/airgap --tls files --cert chain.pem --key key.pem",
			"airgap serve --store /srv/airgap --access /etc/airgap/access.hcl --audit-log /var/log/airgap/audit.jsonl"}},
	"ca": {"--store DIR",
		"Prints the built-in CA certificate (PEM) on stdout and its SHA-256 fingerprint on stderr,\nfor the clients to trust.",
		nil,
		[]string{"airgap ca --store /srv/airgap > airgap-ca.pem"}},
	"client-config": {"--url https://HOST:PORT/ [--store DIR] [--tool terraform|tofu] [--mode registry|mirror|oci]",
		"Prints a terraform/tofu CLI configuration that sends every origin registry to the\nappliance; set TF_CLI_CONFIG_FILE to the file (terraform and tofu both read it).",
		[]string{"SSL_CERT_FILE  CA bundle used to reach --url (Linux)"},
		[]string{"airgap client-config --url https://airgap.site.example:8443/ > terraform.rc",
			"airgap client-config --url https://airgap.site.example:8443/ --store /srv/airgap --tool tofu > tofu.rc",
			"airgap client-config --url https://airgap.site.example/ --token-file ci.token > terraform.rc   # with the token (keep it 0600)"}},
	"split": {"--size SIZE --sign-key KEY BUNDLE",
		"Splits a bundle into volumes for media with a size limit: BUNDLE.000 (the signed index)\nand BUNDLE.001, .002, …; the bundle itself is kept.",
		[]string{"AIRGAP_PASSPHRASE  passphrase of --sign-key when there is no terminal",
			"SOURCE_DATE_EPOCH  timestamp of the index"},
		[]string{"airgap split --size dvd --sign-key keys/site.key.asc site.bundle",
			"airgap split --size 700MB --sign-key keys/site.key.asc --json site.bundle"}},
	"push": {"--store DIR --to REGISTRY[/PREFIX] [--username USER (--password-stdin | $AIRGAP_REGISTRY_PASSWORD)]",
		"Publishes the store's providers and modules into an existing OCI registry in OpenTofu's\nlayout (oci_mirror, oci:// modules); idempotent: what is there already is skipped.",
		[]string{"AIRGAP_REGISTRY_PASSWORD  password for --username (or use --password-stdin)",
			"DOCKER_CONFIG  where Docker's config.json with registry credentials lives (default ~/.docker)",
			"SSL_CERT_FILE  CA bundle used to reach the registry (Linux)"},
		[]string{"airgap push --store /srv/airgap --to registry.site.example/airgap",
			"airgap push --store /srv/airgap --to harbor.site.example/tofu --username robot --password-stdin < pass.txt"}},
	"healthcheck": {"[--url https://HOST:PORT/healthz] [--ca FILE] [--wait DURATION]",
		"Asks a running appliance's /healthz and exits 0 when it answers 200 in time: the\ncontainer's HEALTHCHECK and a probe for load balancers and scripts.",
		nil,
		[]string{"airgap healthcheck --url https://127.0.0.1:8443/healthz --ca /store/tls/ca/ca.pem",
			"airgap healthcheck --url https://airgap.site.example/healthz",
			"airgap serve --store store --listen 127.0.0.1:8443 & airgap healthcheck --url https://localhost:8443/healthz --ca airgap-ca.pem --wait 30s"}},
	"prune": {"--store DIR (--keep N | --older-than DURATION | --unused-for DURATION | ADDRESS@VERSION...) [--dry-run]",
		"Removes provider and module versions from the catalog (newest N per address kept, last\nimported before a time, neither imported nor downloaded through 'airgap serve' for a time,\nor named) and deletes the blobs only they used; recorded in the history.",
		nil,
		[]string{"airgap prune --store /srv/airgap --keep 3 --dry-run",
			"airgap prune --store /srv/airgap --older-than 180d",
			"airgap prune --store /srv/airgap --unused-for 90d --dry-run",
			"airgap prune --store /srv/airgap hashicorp/aws@5.61.0 example/vpc/aws@1.0.0"}},
	"gc": {"--store DIR [--dry-run]",
		"Deletes blobs no catalog entry references (after a withdrawal or a prune) and temporary\nfiles of interrupted imports; takes the store lock, safe while 'airgap serve' runs.",
		nil,
		[]string{"airgap gc --store /srv/airgap --dry-run", "airgap gc --store /srv/airgap"}},
	"mirror-dir": {"--store DIR --out PATH [--layout packed|unpacked] [--platform OS_ARCH]... [ADDRESS[@VERSION]...]",
		"Writes the store's providers as a filesystem_mirror directory (terraform providers\nmirror's layout) for hosts with no server, atomically, and prints the provider_installation block.",
		nil,
		[]string{"airgap mirror-dir --store /srv/airgap --out /opt/terraform/mirror --platform linux_amd64",
			"airgap mirror-dir --store /srv/airgap --out ./mirror --layout unpacked hashicorp/aws@5.61.0"}},
	"token": {"(create|list|revoke|anonymous) --access FILE [flags] | (list|revoke) --store DIR [--user EMAIL] | rotate-url-key --store DIR",
		"Edits the access file 'airgap serve --access FILE' enforces: named tokens (stored as hashes;\ncreate prints the secret once, or writes it to --out FILE, mode 0600), what each may read,\nwhen it expires (90 days unless --expires), an optional anonymous rule. Lists and revokes\nthe login tokens people got with 'terraform login' (single sign-on; with --store). A running\nserve reloads either within a second. Patterns: HOST/NAMESPACE/TYPE (providers),\nHOST/NAMESPACE/NAME/SYSTEM (modules), each part a glob; a final /** matches any remaining parts.",
		nil,
		[]string{"airgap token create --access /etc/airgap/access.hcl --name ci-net --allow 'registry.terraform.io/hashicorp/*' --allow 'site.example/net/**' --out ci-net.token --store /srv/airgap",
			"airgap token list --access /etc/airgap/access.hcl --store /srv/airgap",
			"airgap token revoke --access /etc/airgap/access.hcl ci-net --audit-log /var/log/airgap/audit.jsonl",
			"airgap token revoke --store /srv/airgap --user alice@site.example",
			"airgap token anonymous --access /etc/airgap/access.hcl --allow 'registry.terraform.io/hashicorp/*'",
			"airgap token rotate-url-key --store /var/lib/airgap/store"}},
	"audit": {"--log FILE [--since DURATION|DATE] [--token NAME]... [--user EMAIL]... [--store DIR] [--json]",
		"Sums up the audit log 'airgap serve --audit-log FILE' writes (and its rotated files): per\ntoken, the downloads, bytes, client addresses, and the addresses and versions fetched; per\nperson or token, the logins, refused logins, token changes and refused requests; with\n--store, for each version fetched, the bundle that brought it and who approved it at the\ntransfer station.",
		nil,
		[]string{"airgap audit --log /var/log/airgap/audit.jsonl --since 30d",
			"airgap audit --log /var/log/airgap/audit.jsonl --store /srv/airgap",
			"airgap audit --log /var/log/airgap/audit.jsonl --token ci-net --json",
			"airgap audit --log /var/log/airgap/audit.jsonl --user alice@site.example"}},
	"join": {"--keyring FILE --out BUNDLE PART",
		"Checks every part of a split set against its signed index and joins them into one\nbundle file (written atomically; the parts are not changed).",
		nil,
		[]string{"airgap join --keyring site.pub.asc --out site.bundle site.bundle.000"}},
}

const exitCodes = "Exit codes:\n  0    done\n  1    failed (the message says why and what to do; nothing was left half-written)\n  2    wrong command line (nothing was done)\n  130  interrupted by Ctrl-C (143: by SIGTERM); cleaned up, run it again\n"

// verbPlaces groups the verbs by where they run, in the order 'airgap
// help' lists the places; a verb in the verb table must be in one
// (TestHelpGroupsVerbsByPlace).
var verbPlaces = []struct {
	place string
	verbs []string
}{
	{"Connected side (reaches the registries)", []string{"keygen", "export", "split"}},
	{"Transfer station (checks and shows a bundle, writes nothing)", []string{"verify", "show", "approve"}},
	{"Offline side (the store and the appliance)", []string{"import", "inventory", "serve", "ca", "docs", "token", "audit", "prune", "gc", "mirror-dir", "push"}},
	{"Anywhere", []string{"keys", "client-config", "healthcheck", "join"}},
}

func usage(w io.Writer, vs map[string]verb) {
	fmt.Fprintf(w, "airgap %s: carry Terraform/OpenTofu providers and modules into air-gapped networks\n\nUsage: airgap COMMAND [flags]\n", Version)
	listed := map[string]bool{}
	for _, p := range verbPlaces {
		fmt.Fprintf(w, "\n%s:\n", p.place)
		for _, n := range p.verbs {
			if v, ok := vs[n]; ok {
				fmt.Fprintf(w, "  %-14s %s\n", n, v.synopsis())
				listed[n] = true
			}
		}
	}
	var rest []string
	for n := range vs {
		if !listed[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	if len(rest) > 0 {
		fmt.Fprintf(w, "\nOther:\n")
		for _, n := range rest {
			fmt.Fprintf(w, "  %-14s %s\n", n, vs[n].synopsis())
		}
	}
	fmt.Fprintf(w, "\nRun 'airgap help COMMAND' for a command's arguments, flags and examples. 'airgap --version' prints the version.\n\n%s", exitCodes)
}

// serveEnv lists the AIRGAP_ variables serve reads, from the table its
// configuration loader uses, each with its flag's description.
func serveEnv(fs *pflag.FlagSet) []string {
	var out []string
	for _, name := range server.EnvSettings() {
		usage := ""
		if f := fs.Lookup(name); f != nil {
			usage = f.Usage
		}
		line := fmt.Sprintf("%s  as --%s: %s", server.EnvName(name), name, usage)
		if f := fs.Lookup(name); f != nil && f.Value.Type() == "stringSlice" {
			line += " (comma-separated)"
		}
		out = append(out, line)
	}
	return out
}

func printVerbHelp(w io.Writer, name string, fs *pflag.FlagSet) {
	h := helps[name]
	fmt.Fprintf(w, "Usage: airgap %s %s\n\n%s\n\nFlags:\n%s", name, h.usage, h.about, fs.FlagUsages())
	env := h.env
	if name == "serve" {
		env = append(append(serveEnv(fs), env...), "(a flag wins over its variable, a variable over the --config file)")
	}
	if len(env) > 0 {
		fmt.Fprintf(w, "\nEnvironment:\n  %s\n", strings.Join(env, "\n  "))
	}
	if len(h.examples) > 0 {
		fmt.Fprintf(w, "\nExamples:\n  %s\n", strings.Join(h.examples, "\n  "))
	}
	fmt.Fprintf(w, "\n%s%s", exitCodes, verbExits[name])
}
