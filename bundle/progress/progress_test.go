package progress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBytesLine(t *testing.T) {
	var done int64 = 100 << 20
	got := Bytes("import a.bundle", 400<<20, func() int64 { return done })(2 * time.Second)
	want := "import a.bundle  100.0 MiB of 400.0 MiB (25%)  50.0 MiB/s  ETA 6s"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := Bytes("x", 0, func() int64 { return 1536 })(time.Second); got != "x  1.5 KiB  1.5 KiB/s" {
		t.Errorf("unknown total: %q", got)
	}
}

// Off a terminal there is no status line and no escape code; log lines
// pass through as they are.
func TestPlainOffTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = Stream(f, "verify", 10, func(c *Counter) error {
		c.Reader(strings.NewReader("0123456789")).Read(make([]byte, 10))
		if c.N() != 10 {
			t.Errorf("counted %d bytes, want 10", c.N())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l := Start(f, func(time.Duration) string { return "status" })
	l.Logf("fetched %s", "x")
	time.Sleep(1200 * time.Millisecond)
	l.Stop()
	l.Stop()
	b, _ := os.ReadFile(f.Name())
	if string(b) != "fetched x\n" {
		t.Errorf("off a terminal: %q", b)
	}
}
