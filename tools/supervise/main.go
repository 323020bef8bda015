//go:build linux

// egress-supervise runs one command (the Pulumi CLI) and makes sure the engine processes it starts die
// with it and with egress: `egress-supervise -- <command> [args...]`.
//
// Node cannot call prctl, and the Pulumi CLI puts every plugin in its own process group, so when egress
// is SIGKILLed nothing stops pulumi and its plugins. This binary sits between them: the kernel signals it
// when its parent dies (PR_SET_PDEATHSIG), and as a child subreaper it inherits every orphaned
// descendant, so it can find and kill the whole engine tree. Engine processes are recognised by the
// EGRESS_ENGINE_RUN=<marker> entry they all inherit; the local proxies the engine starts detached with a
// clean environment lack it and outlive the run on purpose.
//
// Exit codes: the command's own; 128+n when a signal n killed it; 125 when the caller was already gone at
// start (the command is not started); 126/127 when the command cannot be executed / is not found; 2 for
// a usage error; 137 after the caller died or asked for an end now (SIGUSR1).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	prSetChildSubreaper = 36 // not in package syscall
	parentDeathSignal   = syscall.SIGUSR2
	// endNowSignal: SIGKILL the command and sweep the engine tree now, as when the caller dies.
	endNowSignal = syscall.SIGUSR1
	markerVar    = "EGRESS_ENGINE_RUN"
	sweepBudget  = 5 * time.Second
)

// prctl settings are per thread (pdeath) or per process (subreaper); keep main on the main thread so
// the parent-death setting lives on the thread that lives as long as the process.
func init() { runtime.LockOSThread() }

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "egress-supervise: "+format+"\n", args...)
	os.Exit(code)
}

func main() {
	if len(os.Args) < 3 || os.Args[1] != "--" {
		fail(2, "usage: egress-supervise -- <command> [args...]")
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		fail(2, "prctl(PR_SET_CHILD_SUBREAPER): %v", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(parentDeathSignal), 0); e != 0 {
		fail(2, "prctl(PR_SET_PDEATHSIG): %v", e)
	}
	// Subscribe before the fork, and before the check below, so no SIGCHLD or pdeath signal is lost: Go
	// drops a SIGUSR2 that comes before Notify. Caught signals are reset to their defaults in the child
	// by exec.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, endNowSignal, parentDeathSignal)
	// The caller may have died before the prctl or the Notify above; then no signal will ever come.
	parent := os.Getppid()
	if want := os.Getenv("EGRESS_SUPERVISE_PARENT"); want != "" {
		pid, err := strconv.Atoi(want)
		if err != nil {
			fail(2, "EGRESS_SUPERVISE_PARENT=%q is not a pid", want)
		}
		if pid != parent {
			fail(125, "caller %d is gone; not starting %s", pid, os.Args[2])
		}
	}
	marker := ""
	if v, ok := os.LookupEnv(markerVar); ok {
		marker = markerVar + "=" + v
	}

	child, err := start(os.Args[2:])
	if err != nil {
		code := 126
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
			code = 127
		}
		fail(code, "cannot run %s: %v", os.Args[2], err)
	}

	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			if status, done := reap(child); done {
				sweep(marker)
				os.Exit(exitCode(status))
			}
		case syscall.SIGTERM, syscall.SIGHUP:
			_ = syscall.Kill(child, sig.(syscall.Signal))
		case syscall.SIGINT:
			// Not forwarded: SIGINT reaches the child through our process group (a terminal's Ctrl-C,
			// or egress's kill(-pgid)), and pulumi takes a second SIGINT as "abort now, skip cleanup".
		case endNowSignal:
			// The caller gives up on a run that a cancel did not end (a leader that lost its stack's
			// lock, src/engine/supervised.ts terminateEngines): the same end as the caller's death.
			_ = syscall.Kill(child, syscall.SIGKILL)
			sweep(marker)
			awaitExit(child)
			os.Exit(128 + int(syscall.SIGKILL))
		case parentDeathSignal:
			if os.Getppid() == parent {
				continue // someone sent the signal by hand; the caller is alive
			}
			_ = syscall.Kill(child, syscall.SIGKILL)
			sweep(marker)
			awaitExit(child)
			os.Exit(128 + int(syscall.SIGKILL))
		}
	}
}

// start runs the command in our process group (so Ctrl-C reaches it directly) with our environment and
// stdio. Not os/exec: its Wait would race our wait4(-1) reaper.
func start(argv []string) (int, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return 0, err
	}
	return syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
}

// reap collects every exited child (orphans are reparented to us) and reports the main child's status
// once it is among them.
func reap(child int) (status syscall.WaitStatus, done bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return status, done
		}
		if pid == child {
			status, done = ws, true
		}
	}
}

// awaitExit reaps the main child after a SIGKILL (bounded, in case it is stuck in the kernel) so it does
// not linger as a zombie of whoever inherits it.
func awaitExit(child int) {
	for deadline := time.Now().Add(sweepBudget); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(child, &ws, syscall.WNOHANG, nil); pid == child || err == syscall.ECHILD {
			return
		}
	}
}

func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// sweep SIGKILLs every marked descendant until none is left (new ones may be forked meanwhile) or the
// budget runs out. Without a marker it cannot tell engine processes from the proxies that must survive,
// so it kills nothing beyond the main child (which the caller has already dealt with).
func sweep(marker string) {
	if marker == "" {
		return
	}
	deadline := time.Now().Add(sweepBudget)
	for {
		left := 0
		for _, pid := range descendants(os.Getpid()) {
			if hasEnvEntry(pid, marker) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				left++
			}
		}
		reap(0) // killed orphans are our children now; zombies carry no environ and stop matching
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "egress-supervise: %d engine processes still alive after %s\n", left, sweepBudget)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// descendants lists the pids below root, from the parent links in /proc/<pid>/stat.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// hasEnvEntry reads the environment a process started with; unreadable (gone, zombie, not ours) is false.
func hasEnvEntry(pid int, entry string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if string(kv) == entry {
			return true
		}
	}
	return false
}
