package main

// client-config: the terraform/tofu CLI configuration that sends every
// origin to the appliance. Its flags, its help text and the calls into
// package server, which writes the configuration and checks the appliance.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/protocol"
)

type clientConfigCmd struct {
	url       string
	storeD    string
	tool      string
	mode      string
	tokenFile string
	login     bool
	releases  bool
}

func (c *clientConfigCmd) synopsis() string {
	return "print a terraform/tofu CLI config that points every origin at the appliance"
}

func (c *clientConfigCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("client-config", pflag.ContinueOnError)
	fs.StringVar(&c.url, "url", "", "the appliance's base URL, e.g. https://airgap.site:8443/ (required)")
	fs.StringVar(&c.storeD, "store", "", "read the origins from this store instead of asking the server (--url is still checked; a failed check is a warning)")
	fs.StringVar(&c.tool, "tool", "terraform", "terraform or tofu")
	fs.StringVar(&c.mode, "mode", "registry", "registry (host overrides; best lock files), mirror (network mirror) or oci (OpenTofu oci_mirror; with --tool tofu)")
	fs.StringVar(&c.tokenFile, "token-file", "", "a file holding your token ('airgap token create' printed it; - for stdin): written into the configuration as credentials blocks, and used to ask --url")
	fs.BoolVar(&c.releases, "releases", false, "print instead the settings of the version managers and installers (tenv, tfenv, tfswitch, hc-install, tofudl) for the Terraform and OpenTofu releases the appliance serves under /releases/, as a shell script to source")
	fs.BoolVar(&c.login, "login", false, "the appliance signs people in (single sign-on): add login.v1 to every host block and list the 'terraform login' commands to run (the default when --url's discovery document offers login.v1)")
	return fs
}

func (*clientConfigCmd) help() verbHelp {
	return verbHelp{
		usage: "--url https://HOST:PORT/ [--store DIR] [--tool terraform|tofu] [--mode registry|mirror|oci] | --url https://HOST:PORT/ --releases",
		about: "Prints a terraform/tofu CLI configuration that sends every origin registry to the\nappliance. Save it as ~/.terraformrc (tofu: ~/.tofurc), or point TF_CLI_CONFIG_FILE at it;\nwhen the appliance signs people in, save it as ~/.terraformrc only and run the\n'terraform login' commands it lists (one per host): with TF_CLI_CONFIG_FILE set, terraform\nand tofu ignore the tokens 'terraform login' stores (client-config warns when it is set).",
		env:   []string{"SSL_CERT_FILE  CA bundle used to reach --url (Linux)"},
		examples: []string{"airgap client-config --url https://airgap.site.example:8443/ > terraform.rc",
			"airgap client-config --url https://airgap.site.example:8443/ --store /srv/airgap --tool tofu > tofu.rc",
			"airgap client-config --url https://airgap.site.example/ --token-file ci.token > terraform.rc   # with the token (keep it 0600)",
			"airgap client-config --url https://airgap.site.example/ --releases > airgap-releases.sh   # tenv, tfenv, tfswitch, hc-install, tofudl"},
	}
}

func (c *clientConfigCmd) run(args []string) error {
	if err := checkUsage("client-config", args, nil, flagVal{"url", c.url}); err != nil {
		return err
	}
	if c.tool != "terraform" && c.tool != "tofu" {
		return usageError{"--tool must be terraform or tofu"}
	}
	if c.releases {
		base, err := protocol.NormalizeBaseURL(c.url)
		if err == nil {
			err = protocol.WriteReleaseSettings(os.Stdout, base)
		}
		if err != nil {
			return usageError{err.Error()}
		}
		return nil
	}
	opt := protocol.ClientConfigOptions{URL: c.url, Tool: c.tool, Mode: c.mode}
	if c.tokenFile != "" {
		tok, err := readTokenFile(c.tokenFile)
		if err != nil {
			return err
		}
		opt.Token = tok
	}
	// Every flag is checked before the network or the store is asked.
	if err := protocol.WriteClientConfig(io.Discard, opt); err != nil {
		return usageError{err.Error()}
	}
	opt.URL, _ = protocol.NormalizeBaseURL(c.url)
	if c.storeD != "" {
		_, st, cleanup, err := openReadStore(c.storeD)
		if err == nil {
			defer cleanup()
		}
		if err != nil {
			return err
		}
		opt.Origins = protocol.Origins(st.Catalog())
		// The origins come from the store; the URL is checked all the same,
		// and a failed check is said plainly (the config is still printed:
		// the appliance may not be running yet, or be reachable only from
		// the clients' network).
		if len(opt.Origins) > 0 {
			err := protocol.CheckAppliance(opt.URL, opt.Token, opt.Origins, 5*time.Second)
			switch {
			case errors.Is(err, protocol.ErrSignInRequired):
				opt.Login = true
				fmt.Fprintf(os.Stderr, "checked: %s answers with a certificate this machine trusts, and signs people in (single sign-on; its origins are listed only to them)\n", dist.Printable(opt.URL))
			case err != nil:
				fmt.Fprintf(os.Stderr, "warning: could not confirm that %s is this store's appliance: %s\nthe configuration was printed anyway (its origins come from --store); check --url before you hand it out\n",
					dist.Printable(opt.URL), dist.PrintableLines(err.Error()))
			default:
				fmt.Fprintf(os.Stderr, "checked: %s answers as the airgap appliance of this store, with a certificate this machine trusts\n", dist.Printable(opt.URL))
			}
		}
	} else {
		doc, err := protocol.FetchOrigins(opt.URL, opt.Token)
		if err != nil {
			return err
		}
		opt.Origins = doc.Origins
	}
	if len(opt.Origins) == 0 {
		return errors.New("the appliance serves nothing yet, so the config would send terraform to the internet\nhint: import a bundle first: airgap import --keyring site.pub.asc --store DIR BUNDLE")
	}
	if c.login {
		opt.Login = true
	} else if !opt.Login {
		opt.Login, _ = protocol.ApplianceLogin(opt.URL, 5*time.Second)
	}
	warnCLIConfigEnv(c.tool, opt.Login && opt.Token == "")
	return protocol.WriteClientConfig(os.Stdout, opt)
}

// warnCLIConfigEnv warns when TF_CLI_CONFIG_FILE is set here: terraform
// and tofu then read that file only, neither ~/.terraformrc (~/.tofurc)
// nor, with login, the tokens 'terraform login' stores in their
// configuration directory, so a sign-in "succeeds" and init fails with a
// bare 401.
func warnCLIConfigEnv(tool string, login bool) {
	v := os.Getenv("TF_CLI_CONFIG_FILE")
	if v == "" {
		return
	}
	rc := "~/.terraformrc"
	if tool == "tofu" {
		rc = "~/.tofurc"
	}
	if login {
		fmt.Fprintf(os.Stderr, "warning: TF_CLI_CONFIG_FILE is set (%s): with it set, %s reads neither %s nor the tokens '%s login' stores, so they would be stored and never sent\nhint: unset TF_CLI_CONFIG_FILE (and take it out of your shell's profile), save this configuration as %s, then run the '%s login' commands it lists\n",
			dist.Printable(v), tool, rc, tool, rc, tool)
		return
	}
	fmt.Fprintf(os.Stderr, "warning: TF_CLI_CONFIG_FILE is set (%s): %s reads that file only, not %s\nhint: save this configuration as that file, or unset the variable and save it as %s\n",
		dist.Printable(v), tool, rc, rc)
}

// cliConfigEnvWarning is what a command that reads the person's login
// token (as 'terraform login' stores it) says when TF_CLI_CONFIG_FILE is
// set to v: neither terraform nor airgap then reads those tokens, so a
// sign-in "succeeds" and the next request is refused.
func cliConfigEnvWarning(v string) string {
	return fmt.Sprintf("warning: TF_CLI_CONFIG_FILE is set (%s): with it set, terraform, tofu and airgap read that file only, not the tokens 'terraform login' stores, so a login is stored and never sent\n"+
		"hint: unset TF_CLI_CONFIG_FILE (and take it out of your shell's profile), keep the client configuration in ~/.terraformrc (tofu: ~/.tofurc), and run 'terraform login' again; or give --token-file FILE\n", dist.Printable(v))
}

// readTokenFile reads a token from a file ('-': stdin): its first line,
// which must look like a token.
func readTokenFile(path string) (string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok := strings.TrimSpace(line)
	if !acl.LooksLikeSecret(tok) {
		return "", fmt.Errorf("--token-file %s does not hold an airgap token (they start %q and are %d characters long)\nhint: save what 'airgap token create' printed, and nothing else", path, acl.SecretPrefix, len(acl.SecretPrefix)+43)
	}
	return tok, nil
}
