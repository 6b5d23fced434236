package access

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestAuditRefusalsPastTheSlots: the audit log counts refusals apart for
// 4,096 client addresses a minute; a flood from more addresses (here
// 4,096 + 300, as X-Forwarded-For from a --trusted-proxy) must not hide
// the rest. When serve stops, the refusals file has one "refusals" line
// of client "other" that says how many refusals came from how many more
// addresses (300 of each), samples the first by address, and
// airgap_audit_refusals_unitemised_total counted them while serve ran.
func TestAuditRefusalsPastTheSlots(t *testing.T) {
	t.Parallel()
	metrics := harness.FreePort(t)
	a := newAttackTarget(t, "--trusted-proxy", "127.0.0.1", "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metrics))
	cl := harness.CAFileClient(t, a.caFile)
	const slots, past = 4096, 300
	wrong := "airgap_" + strings.Repeat("A", 43)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	const workers = 4
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < slots+past; i += workers {
				req, _ := http.NewRequest("GET", a.base+"v1/providers/hashicorp/random/versions", nil)
				req.Header.Set("Authorization", "Bearer "+wrong)
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
				resp, err := cl.Do(req)
				code := -1
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if codes[401] != slots+past {
		t.Fatalf("answers: %v, want %d × 401", codes, slots+past)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("airgap_audit_refusals_unitemised_total %d\n", past); !strings.Contains(string(body), want) {
		t.Errorf("the metrics do not say %q", strings.TrimSpace(want))
	}

	a.proc.Signal(os.Interrupt)
	e := waitAudit(t, a.audit, "the refusals past the slots", func(e map[string]any) bool {
		return e["event"] == "refusals" && e["client"] == "other"
	})
	b, _ := json.Marshal(e)
	t.Logf("%s", b)
	sample, _ := e["sample"].([]any)
	if e["count"] != float64(past) || e["addresses"] != float64(past) || e["addresses_at_least"] != nil ||
		!strings.Contains(fmt.Sprint(e["detail"]), fmt.Sprintf("%d refusals from %d more addresses not itemised", past, past)) ||
		len(sample) == 0 || !strings.HasPrefix(fmt.Sprint(sample[0]), "10.") {
		t.Errorf("the line for the addresses past the %d counted apart: %s", slots, b)
	}
}
