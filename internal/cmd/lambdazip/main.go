// Command lambdazip writes a Lambda deployment package: a zip holding the
// given files at its root, executable (0755), with a fixed modification
// time, so that one binary always gives the same zip and Terraform's
// source_code_hash changes only with the code. make lambda-zip runs it:
//
//	lambdazip -o build/lambda/bootstrap.zip build/lambda/bootstrap
package main

import (
	"archive/zip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

func main() {
	out := flag.String("o", "", "the zip to write")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: lambdazip -o package.zip file...")
		os.Exit(2)
	}
	if err := write(*out, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "lambdazip: %v\n", err)
		os.Exit(1)
	}
}

// epoch is the modification time of every entry: the zip format's first
// representable day, so that nothing of the build's time gets in.
var epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// write writes the zip at path holding files, each under its base name.
func write(path string, files []string) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	zw := zip.NewWriter(f)
	for _, name := range files {
		if err := add(zw, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return zw.Close()
}

// add writes the file name into zw, executable.
func add(zw *zip.Writer, name string) error {
	src, err := os.Open(name)
	if err != nil {
		return err
	}
	defer src.Close()
	h := &zip.FileHeader{Name: filepath.Base(name), Method: zip.Deflate, Modified: epoch}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	return err
}
