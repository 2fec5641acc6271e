package main

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteIsReproducibleAndExecutable: the package holds bootstrap at its
// root, executable, and two builds of one binary give the same bytes.
func TestWriteIsReproducibleAndExecutable(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a", "p.zip"), filepath.Join(dir, "b.zip")
	for _, out := range []string{a, b} {
		if err := write(out, []string{bin}); err != nil {
			t.Fatal(err)
		}
	}
	za, _ := os.ReadFile(a)
	zb, _ := os.ReadFile(b)
	if !bytes.Equal(za, zb) {
		t.Error("two packages of one file differ")
	}
	r, err := zip.NewReader(bytes.NewReader(za), int64(len(za)))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.File) != 1 || r.File[0].Name != "bootstrap" || r.File[0].Mode().Perm() != 0o755 {
		t.Fatalf("entries %+v, want bootstrap, mode 0755", r.File)
	}
	rc, err := r.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != "#!/bin/sh\necho hi\n" {
		t.Errorf("content %q", got)
	}
}
