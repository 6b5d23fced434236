package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
)

// station is a stand-in internet, a site key, a store and the exports
// made against them.
type station struct {
	in      *registrytest.Internet
	Work    string
	Online  []string
	Keyring string
	Store   string
}

func NewStation(t *testing.T, in *registrytest.Internet) *station {
	s := &station{in: in, Work: t.TempDir()}
	s.Online = append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(s.Work, "none.tfrc"))
	MustRun(t, s.Work, nil, Bin, "keygen", "--out", "k/site", "--name", "Site Ops <ops@site.test>", "--no-passphrase")
	s.Keyring = filepath.Join(s.Work, "k/site.pub.asc")
	s.Store = filepath.Join(s.Work, "store")
	return s
}

// export writes manifest text to NAME.hcl and exports NAME.bundle.
func (s *station) Export(t *testing.T, name, manifest string, extra ...string) string {
	t.Helper()
	hcl := filepath.Join(s.Work, name+".hcl")
	os.WriteFile(hcl, []byte(manifest), 0o644)
	out := filepath.Join(s.Work, name+".bundle")
	MustRun(t, s.Work, s.Online, Bin, append([]string{"export", "--manifest", hcl, "--sign-key", "k/site.key.asc", "--out", out,
		"--cache", filepath.Join(s.Work, "cache")}, extra...)...)
	return out
}

// verify runs 'airgap verify' with args and returns stdout+stderr and the exit code.
func (s *station) Verify(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := CmdRun(t, s.Work, nil, Bin, append([]string{"verify", "--keyring", s.Keyring}, args...)...)
	return out, ExitCode(err)
}

// verifyJSON runs 'airgap verify --json' and decodes its one document,
// checking the JSON conventions on the way: snake_case keys, no nulls.
func (s *station) VerifyJSON(t *testing.T, args ...string) (Review, map[string]any, int) {
	t.Helper()
	stdout, _, code := RunSplit(t, s.Work, nil, append([]string{"verify", "--keyring", s.Keyring, "--json"}, args...)...)
	var raw map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("verify --json printed no JSON document: %v\n%s", err, stdout)
	}
	CheckJSONConventions(t, "", raw)
	var r Review
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	return r, raw, code
}

// CheckJSONConventions fails on what breaks the JSON convention
// (jsonViolations, json_convention_test.go).
func CheckJSONConventions(t *testing.T, at string, v any) {
	t.Helper()
	for _, bad := range JSONViolations("verify --json"+at, v) {
		t.Error(bad)
	}
}

// Review is the part of 'airgap verify --json' the tests read.
type Review struct {
	OK        bool   `json:"ok"`
	Status    string `json:"status"`
	Error     string `json:"error"`
	Attention []struct {
		Kind, Subject, Message string
	} `json:"attention"`
	Providers []reviewProvider `json:"providers"`
	Modules   []struct {
		Address, Version, Source string
		Vendored                 []struct{ File, Source, Path, SHA256 string }
	} `json:"modules"`
	Withdraw []struct {
		Addr     string
		Versions []string
	} `json:"withdraw"`
	PublisherKeys []struct {
		Namespace string
		History   []struct{ Fingerprint, How string }
		InBundle  []struct{ Fingerprint, Status string } `json:"in_bundle"`
	} `json:"publisher_keys"`
	Forecast *struct {
		Verdict string
		Refused []struct{ Rule, Kind, Address, Version, Reason string }
	} `json:"forecast"`
	Against *struct {
		Added          []struct{ Kind, Address, Version string }       `json:"added"`
		AlreadyPresent []struct{ Kind, Address, Version string }       `json:"already_present"`
		Withdrawn      []struct{ Kind, Address, Version string }       `json:"withdrawn"`
		Refused        []struct{ Kind, Address, Version, Note string } `json:"refused"`
		KeyChanges     []struct {
			Namespace string
			Before    []struct{ Fingerprint string }
			Key       struct{ Fingerprint, Status string }
		} `json:"key_changes"`
	} `json:"against"`
}

func (r Review) AttentionOf(kind string) []string {
	var out []string
	for _, a := range r.Attention {
		if a.Kind == kind {
			out = append(out, a.Message)
		}
	}
	return out
}

// reviewProvider is a provider entry of 'airgap verify --json'.
type reviewProvider struct {
	Address, Version, Trust string
	KeyStatus               string `json:"key_status"`
	InStore                 string `json:"in_store"`
	Platforms               []struct {
		Platform, SHA256 string
	}
	Signature *struct {
		Signer  struct{ Fingerprint, Identity string }
		Created string
	}
}

func (r Review) Provider(addr, version string) (reviewProvider, bool) {
	for _, x := range r.Providers {
		if x.Address == addr && x.Version == version {
			return x, true
		}
	}
	return reviewProvider{}, false
}
