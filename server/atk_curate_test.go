package server_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/airgap/airgap/server"
)

// TestCatalogPageAllocPerRequest: what one request for the catalog page
// allocates does not grow with the catalog (50,000 providers): the page's
// rows, not a copy of the address list per request, which concurrent
// clients would multiply.
func TestCatalogPageAllocPerRequest(t *testing.T) {
	h := server.New(indexStore{bigIndex(50000, 1, []string{"linux_amd64"})}, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	get := func(path string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "https://appliance.example"+path, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: %d", path, rec.Code)
		}
	}
	get("/") // builds the model once
	for _, path := range []string{"/", "/?q=type", "/?page=400", "/?page=-5", "/?page=99999999999999999999"} {
		const n = 20
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		for i := 0; i < n; i++ {
			get(path)
		}
		runtime.ReadMemStats(&b)
		per := (b.TotalAlloc - a.TotalAlloc) / n
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "https://appliance.example"+path, nil))
		t.Logf("%s: %d KiB allocated per request (page %d KiB)", path, per>>10, rec.Body.Len()>>10)
		if per > 1<<20 {
			t.Errorf("%s: %d KiB allocated per request at 50,000 providers", path, per>>10)
		}
	}
}
