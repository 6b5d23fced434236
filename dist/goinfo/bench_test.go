//go:build unix

package goinfo_test

import (
	"archive/zip"
	"compress/flate"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
)

// benchBinary is the Go binary the benchmarks scan: $AIRGAP_BENCH_PLUGIN
// (a real provider plugin, e.g. the AWS provider's 700 MB, whose build
// information lies past 90% of its bytes, as in every Go binary: the
// search runs over nearly all of it), else the test binary itself.
func benchBinary(b *testing.B) []byte {
	b.Helper()
	p := os.Getenv("AIRGAP_BENCH_PLUGIN")
	if p == "" {
		var err error
		if p, err = os.Executable(); err != nil {
			b.Fatal(err)
		}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkScanner: the Scanner alone over a Go binary in 256 KiB writes
// (what the h1 pass hands it), against sha256 of the same bytes.
func BenchmarkScanner(b *testing.B) {
	data := benchBinary(b)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	defer cpuPerOp(b)()
	for range b.N {
		var s goinfo.Scanner
		for p := data; len(p) > 0; {
			n := min(len(p), 256<<10)
			s.Write(p[:n])
			p = p[n:]
		}
		if info := s.Result(); info.None != "" {
			b.Fatal(info.None)
		}
	}
}

// BenchmarkScanZip: a provider package of the binary (deflated at the
// default level, as goreleaser's zips are): the h1 alone (dist.H1), then
// the h1 with the build information read in the same pass (ScanZip). The
// difference is what the build information costs.
func BenchmarkScanZip(b *testing.B) {
	data := benchBinary(b)
	zp := filepath.Join(b.TempDir(), "p.zip")
	f, err := os.Create(zp)
	if err != nil {
		b.Fatal(err)
	}
	zw := zip.NewWriter(f)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	w, _ := zw.Create("terraform-provider-x_v1.0.0_x5")
	w.Write(data)
	zw.Close()
	f.Close()
	b.Run("h1", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		defer cpuPerOp(b)()
		for range b.N {
			if _, err := dist.H1(zp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("h1+buildinfo", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		defer cpuPerOp(b)()
		for range b.N {
			if _, info, err := goinfo.ScanZip(zp); err != nil || info.None != "" {
				b.Fatal(err, info)
			}
		}
	})
}

// cpuPerOp reports the process's CPU time (user + system) per operation
// beside the wall time: on a shared machine the wall time moves with the
// load, the CPU time far less. Call it as defer cpuPerOp(b)().
func cpuPerOp(b *testing.B) func() {
	t0 := cpuTime()
	return func() {
		b.ReportMetric((cpuTime()-t0).Seconds()*1000/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
