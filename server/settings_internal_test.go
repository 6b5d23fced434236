package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/server/protocol"
	"github.com/spf13/pflag"
)

// TestSettingsTable checks that the settings table and ServeConfig name
// the same settings in the same order, and pins what the environment may
// carry and what SIGHUP applies.
func TestSettingsTable(t *testing.T) {
	var fields []string
	ty := settingsType()
	for i := 0; i < ty.NumField(); i++ {
		if name, _, _ := strings.Cut(ty.Field(i).Tag.Get("hcl"), ","); name != "" {
			fields = append(fields, name)
		}
	}
	if names := settingNames(); !slices.Equal(names, fields) {
		t.Errorf("the settings table names\n%v\nServeConfig's fields\n%v", names, fields)
	}
	if got, want := EnvSettings(), []string{"hostname", "listen", "metrics-listen"}; !slices.Equal(got, want) {
		t.Errorf("environment settings %v, want %v", got, want)
	}
	var applied []string
	for _, s := range serveSettings {
		if s.reload == reloadApplied {
			applied = append(applied, s.name)
		}
	}
	slices.Sort(applied)
	if want := []string{"cert", "hostname", "key", "log-file", "log-level", "passthrough-proxy", "trusted-proxy"}; !slices.Equal(applied, want) {
		t.Errorf("SIGHUP applies %v, want %v", applied, want)
	}
	if settingNamed("access").reload != reloadWhileOn {
		t.Error("access: SIGHUP must apply a new access file only while access control stays on")
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	ServeFlags(fs)
	c, err := LoadServeConfig(fs, "", nil)
	if err == nil || !strings.Contains(err.Error(), "no store") {
		t.Fatalf("without a store: %v, %v", c, err)
	}
	fs.Set("store", "/s")
	if c, err = LoadServeConfig(fs, "", func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if c.Listen != ":8443" || c.MaxConns != ops.DefaultMaxConns || c.UsageFlush != protocol.DefaultUsageInterval.String() || c.Sources["store"] != "flag" || c.Sources["listen"] != "default" {
		t.Errorf("defaults: %+v", c)
	}
}
