//go:build linux

package quickstart

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quickstartTimeout is what the README's Quickstart may take, the
// emulators being installed already.
const quickstartTimeout = 5 * time.Minute

// devDirEnv is the variable that moves duradyn dev's state; the test gives
// the block one of its own, which also marks every process the block
// starts (each inherits it).
const devDirEnv = "DURADYN_DEV_DIR"

// TestQuickstart runs the README's Quickstart block with bash -e at the
// root of the module, in the environment of a fresh shell: it must exit 0
// within quickstartTimeout, print the instance's output and its Completed
// state, and leave no process behind.
func TestQuickstart(t *testing.T) {
	if testing.Short() || os.Getenv("DURADYN_NO_EMULATOR") != "" {
		t.Skip("runs the Quickstart, which starts emulators (make test runs it; -short and DURADYN_NO_EMULATOR skip it)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "quickstart.sh")
	if err := os.WriteFile(script, []byte(quickstartBlock(t, filepath.Join(root, "README.md"))), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := devDirEnv + "=" + t.TempDir()
	t.Cleanup(func() { killLeftovers(t, marker) })

	ctx, cancel := context.WithTimeout(context.Background(), quickstartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", script)
	cmd.Dir = root
	cmd.Env = append(freshShellEnv(), marker)
	// The block and what it starts in the background form one group,
	// killed as a whole when the time is up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(time.Second)
	if ctx.Err() != nil {
		t.Fatalf("the Quickstart did not finish within %v; its output:\n%s", quickstartTimeout, out)
	}
	if err != nil {
		t.Fatalf("the Quickstart failed after %v (%v); its output:\n%s", took, err, out)
	}
	t.Logf("the Quickstart took %v", took)
	for _, want := range []string{"Hello, world!", "Completed"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the Quickstart's output lacks %q:\n%s", want, out)
		}
	}
	if left := processesWith(t, marker); len(left) > 0 {
		t.Errorf("the Quickstart left processes behind:\n%s", strings.Join(left, "\n"))
	}
}

// quickstartBlock returns the first ```sh block of the Quickstart section
// of the README at path.
func quickstartBlock(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block strings.Builder
	inSection, inBlock := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			if inSection {
				t.Fatalf("%s: the Quickstart section has no ```sh block", path)
			}
			inSection = line == "## Quickstart"
		case inSection && !inBlock && line == "```sh":
			inBlock = true
		case inBlock && line == "```":
			return block.String()
		case inBlock:
			block.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("%s: no ```sh block in a section \"## Quickstart\"", path)
	return ""
}

// freshShellEnv is this process's environment without the variables that
// configure duradyn or the AWS SDK, which a newcomer's shell does not set;
// DURADYN_CACHE_DIR stays, as it says where the emulators are installed.
func freshShellEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if (strings.HasPrefix(kv, "DURADYN_") || strings.HasPrefix(kv, "AWS_")) && !strings.HasPrefix(kv, "DURADYN_CACHE_DIR=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// processesWith lists the processes whose environment holds kv, as
// "pid: command line".
func processesWith(t *testing.T, kv string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("list processes: %v", err)
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// Unreadable: gone, or not this user's, so not the block's.
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !slices.ContainsFunc(bytes.Split(environ, []byte{0}), func(v []byte) bool { return string(v) == kv }) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		found = append(found, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte(" "))))
	}
	return found
}

// killLeftovers kills the processes a failed run left behind, so that a
// failure leaves nothing running either.
func killLeftovers(t *testing.T, kv string) {
	for _, p := range processesWith(t, kv) {
		pid, _ := strconv.Atoi(p[:strings.IndexByte(p, ':')])
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// awaitExec waits until the kernel has set up pid's new program: Start
// returns once the exec is past its point of no return, but /proc shows an
// empty environment and command line until the program's stack is built.
func awaitExec(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && len(cmdline) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: no command line in /proc after 10s (err %v)", pid, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProcessesWithFindsMarkedProcesses: the leftover check finds a
// process by the variable in its environment, and not once it is gone.
func TestProcessesWithFindsMarkedProcesses(t *testing.T) {
	marker := devDirEnv + "=" + t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	awaitExec(t, cmd.Process.Pid)
	want := fmt.Sprintf("%d: sleep 60", cmd.Process.Pid)
	if got := processesWith(t, marker); !slices.Equal(got, []string{want}) {
		t.Errorf("processesWith = %q, want [%q]", got, want)
	}
	killLeftovers(t, marker)
	_ = cmd.Wait() // reaped: gone from /proc
	if got := processesWith(t, marker); len(got) > 0 {
		t.Errorf("processesWith after the kill = %q, want none", got)
	}
}
