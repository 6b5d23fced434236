package ops

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every line written by many goroutines reaches the file, each whole and
// in its goroutine's order, within about 100 ms, and the rest at Close.
func TestLogWriterLosesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.log")
	w, err := OpenLogWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("first\n"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, _ := os.ReadFile(path); string(b) == "first\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a line was not written out within 5 s (flushes every 100 ms)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	const writers, lines = 8, 5000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				fmt.Fprintf(w, "g%d line %06d %s\n", g, i, strings.Repeat("x", i%200))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(got) != 1+writers*lines {
		t.Fatalf("%d lines, want %d", len(got), 1+writers*lines)
	}
	next := make([]int, writers)
	for _, l := range got[1:] {
		var g, i int
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("line %q is cut", l)
		}
		fmt.Sscanf(f[0], "g%d", &g)
		fmt.Sscanf(f[2], "%d", &i)
		if i != next[g] || len(l) != len(fmt.Sprintf("g%d line %06d ", g, i))+i%200 {
			t.Fatalf("line %q: want g%d line %06d", l, g, next[g])
		}
		next[g]++
	}
}

// Reopen (SIGHUP after logrotate moved the file) writes what is pending to
// the old file and goes on in a new one at the path.
func TestLogWriterReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.log")
	w, err := OpenLogWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write([]byte("before\n"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("pending\n"))
	if err := w.Reopen(path); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("after\n"))
	w.Flush()
	if b, _ := os.ReadFile(path + ".1"); string(b) != "before\npending\n" {
		t.Errorf("rotated file: %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != "after\n" {
		t.Errorf("new file: %q", b)
	}
	// A path that cannot be opened keeps the log where it was.
	if err := w.Reopen(filepath.Join(dir, "missing", "x.log")); err == nil {
		t.Error("reopen into a missing directory did not fail")
	}
	w.Write([]byte("still\n"))
	w.Flush()
	if b, _ := os.ReadFile(path); string(b) != "after\nstill\n" {
		t.Errorf("after a failed reopen: %q", b)
	}
}

// A full disk (/dev/full: every write fails with ENOSPC) drops lines and
// counts them; once writes work again the log says how many were dropped,
// once.
func TestLogWriterFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("this test needs /dev/full: %v", err)
	}
	w, err := OpenLogWriter("/dev/full")
	if err != nil {
		t.Fatal(err)
	}
	log, _ := NewLogger(w, "json", slog.LevelInfo)
	w.SetNotice(log)
	for i := range 1000 {
		log.Info("request", "n", i)
	}
	w.Flush()
	if n := w.droppedLines(); n != 1000 {
		t.Fatalf("dropped %d lines, want 1000", n)
	}
	good := filepath.Join(t.TempDir(), "serve.log")
	if err := w.Reopen(good); err != nil {
		t.Fatal(err)
	}
	log.Info("request", "n", 1000)
	w.Flush() // writes the line, then the notice is logged
	w.Close()
	b, _ := os.ReadFile(good)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"n":1000`) ||
		!strings.Contains(lines[1], `"msg":"log lines were dropped: the log could not be written","dropped":1000`) || !strings.Contains(lines[1], "no space left on device") {
		t.Fatalf("log after the disk had room again:\n%s", b)
	}
}
