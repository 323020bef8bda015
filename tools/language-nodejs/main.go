// pulumi-language-nodejs, egress's minimal edition.
//
// The real Node.js language host (github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3) cannot
// be fetched here, so this one implements just what `pulumi up`/`preview`/`destroy`/`refresh` of a Node.js
// project need from the 3.248 engine, the same way the real host does it:
//
//   - The engine starts us with its own gRPC address as the last argument and reads the port we serve on
//     from our stdout (rpcutil.ServeWithOptions + one line with the port).
//   - Run spawns `node <@pulumi/pulumi>/cmd/run/index.js --monitor … --engine … --project … --stack …
//     --pwd … [--dry-run] --parallel … --organization … --root-directory … <entry point> [args]` in the
//     program directory, with PULUMI_CONFIG and PULUMI_CONFIG_SECRET_KEYS in its environment, and turns a
//     failed exit into RunResponse.error (exit code 32 = "already reported to the user" → bail).
//
// Unlike the real host it runs compiled JavaScript only (no ts-node), reports no required plugins (the
// engine still loads any provider plugin the program registers, from PATH / next to `pulumi`), installs
// no dependencies, and talks to the resource monitor directly (no sync-invoke pipes or monitor proxy:
// @pulumi/pulumi 3.x only uses those for long-deprecated synchronous invokes).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is set at build time (-X main.version=…) to the Pulumi version this host accompanies.
var version = "3.248.0"

// Exit code with which @pulumi/pulumi's run script says it already printed an actionable message.
const exitAlreadyReported = 32

func main() {
	flag.String("tracing", "", "ignored (accepted for compatibility with the real host)")
	flag.String("root", "", "ignored (accepted for compatibility with the real host)")
	flag.Bool("typescript", false, "ignored: this host runs compiled JavaScript only")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return
	}

	host := &languageHost{}
	host.cancelCtx, host.cancel = context.WithCancel(context.Background())
	if args := flag.Args(); len(args) > 0 {
		// NOTE: the engine passes its address as the last positional argument.
		host.setEngine(args[len(args)-1])
	}

	cancel := make(chan bool)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: could not start the RPC server: %v\n", err)
		os.Exit(1)
	}
	// The engine reads the port from the first line of our stdout.
	fmt.Printf("%d\n", handle.Port)

	// Stop serving (and so exit) when the engine goes away, like the real host does.
	if addr := host.engine(); addr != "" {
		go func() {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			_ = rpcutil.Healthcheck(ctx, addr, 5*time.Minute, stop)
			<-ctx.Done()
			host.cancel()
			close(cancel)
		}()
	}
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: RPC server stopped: %v\n", err)
		os.Exit(1)
	}
}

type languageHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	mu            sync.Mutex
	engineAddress string

	// cancelCtx ends running programs (Cancel RPC or engine gone).
	cancelCtx context.Context
	cancel    context.CancelFunc
}

func (h *languageHost) setEngine(addr string) { h.mu.Lock(); h.engineAddress = addr; h.mu.Unlock() }
func (h *languageHost) engine() string        { h.mu.Lock(); defer h.mu.Unlock(); return h.engineAddress }

func (h *languageHost) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.setEngine(req.GetEngineAddress())
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *languageHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// GetRequiredPlugins: none reported (the real host scans node_modules for `"pulumi": {"resource": true}`).
func (h *languageHost) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *languageHost) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

// InstallDependencies does nothing: dependencies come from `npm ci` in egress's own setup.
func (h *languageHost) InstallDependencies(req *pulumirpc.InstallDependenciesRequest,
	server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	closer, stdout, _, err := rpcutil.MakeInstallDependenciesStreams(server, req.GetIsTerminal())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "egress's pulumi-language-nodejs installs no dependencies; run `npm ci` yourself.")
	return closer.Close()
}

func (h *languageHost) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("could not find node on the $PATH: %w", err)
	}
	out, _ := exec.CommandContext(ctx, node, "--version").Output()
	return &pulumirpc.AboutResponse{
		Executable: node,
		Version:    strings.TrimSpace(string(out)),
		Metadata:   map[string]string{"host": "egress minimal pulumi-language-nodejs"},
	}, nil
}

// GetProgramDependencies lists the dependencies of the nearest package.json at or above the program
// directory, with the versions installed in node_modules (the real host asks npm/yarn/pnpm).
func (h *languageHost) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	resp := &pulumirpc.GetProgramDependenciesResponse{}
	dir := req.GetInfo().GetProgramDirectory()
	for ; dir != ""; dir = parentDir(dir) {
		var pkg struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			continue
		}
		if err := json.Unmarshal(b, &pkg); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "package.json"), err)
		}
		for name, wanted := range pkg.Dependencies {
			v := wanted
			var installed struct {
				Version string `json:"version"`
			}
			if b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json")); err == nil &&
				json.Unmarshal(b, &installed) == nil && installed.Version != "" {
				v = installed.Version
			}
			resp.Dependencies = append(resp.Dependencies, &pulumirpc.DependencyInfo{Name: name, Version: v})
		}
		break
	}
	return resp, nil
}

func (h *languageHost) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancel()
	return &emptypb.Empty{}, nil
}

func (h *languageHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	programDir := info.GetProgramDirectory()
	if programDir == "" {
		programDir = req.GetPwd()
	}
	entry := info.GetEntryPoint()
	if entry == "" {
		entry = req.GetProgram()
	}
	if entry == "" {
		entry = "."
	}
	switch strings.ToLower(filepath.Ext(entry)) {
	case ".ts", ".mts", ".cts", ".tsx":
		return &pulumirpc.RunResponse{Error: fmt.Sprintf(
			"egress's pulumi-language-nodejs runs compiled JavaScript only; point `main` in Pulumi.yaml at the "+
				"compiled .js (e.g. dist/src/program-main.js after `npx tsc`), not %s", entry)}, nil
	}

	node, err := exec.LookPath("node")
	if err != nil {
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not find node on the $PATH: %v", err)}, nil
	}
	runPath := os.Getenv("PULUMI_LANGUAGE_NODEJS_RUN_PATH")
	if runPath == "" {
		if runPath, err = locateRunScript(programDir); err != nil {
			return &pulumirpc.RunResponse{Error: err.Error()}, nil
		}
	}

	args := []string{runPath}
	opt := func(k, v string) {
		if v != "" {
			args = append(args, "--"+k, v)
		}
	}
	opt("monitor", req.GetMonitorAddress())
	opt("engine", h.engine())
	opt("organization", req.GetOrganization())
	opt("project", req.GetProject())
	opt("root-directory", info.GetRootDirectory())
	opt("stack", req.GetStack())
	opt("pwd", programDir)
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	opt("parallel", strconv.Itoa(int(req.GetParallel())))
	args = append(args, entry)
	args = append(args, req.GetArgs()...)

	config := req.GetConfig()
	if config == nil {
		config = map[string]string{}
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("serializing config: %w", err)
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, fmt.Errorf("serializing config secret keys: %w", err)
	}
	env := append(os.Environ(),
		"PULUMI_CONFIG="+string(configJSON),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON),
	)

	// Ends with the Cancel RPC, the engine going away, or the Run call being abandoned.
	cmdCtx, cmdCancel := context.WithCancel(h.cancelCtx)
	defer cmdCancel()
	stopOnDone := context.AfterFunc(ctx, cmdCancel)
	defer stopOnDone()

	cmd := exec.CommandContext(cmdCtx, node, args...)
	cmd.Dir = programDir
	cmd.Env = env
	// Not os.Stdout itself: node may flip the fd to non-blocking; a wrapper makes exec copy through a pipe.
	cmd.Stdout = struct{ io.Writer }{os.Stdout}
	cmd.Stderr = struct{ io.Writer }{os.Stderr}
	cmd.Cancel = func() error {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
	cmd.WaitDelay = 5 * time.Second

	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			switch code := exitErr.ExitCode(); code {
			case exitAlreadyReported:
				return &pulumirpc.RunResponse{Bail: true}, nil
			case 0:
				return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited unexpectedly: %v", exitErr)}, nil
			default:
				return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", code)}, nil
			}
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf(
			"Problem executing program (could not run language executor): %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// locateRunScript finds @pulumi/pulumi/cmd/run/index.js the way node would resolve it from the program
// directory: node_modules of the directory and each ancestor, then NODE_PATH.
func locateRunScript(programDir string) (string, error) {
	const rel = "@pulumi/pulumi/cmd/run/index.js"
	var tried []string
	for dir := programDir; dir != ""; dir = parentDir(dir) {
		p := filepath.Join(dir, "node_modules", rel)
		tried = append(tried, p)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	for _, d := range filepath.SplitList(os.Getenv("NODE_PATH")) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, rel)
		tried = append(tried, p)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("It looks like the Pulumi SDK has not been installed (no %s from %s or NODE_PATH). "+
		"Have you run npm install?", rel, programDir)
}

func parentDir(dir string) string {
	p := filepath.Dir(dir)
	if p == dir {
		return ""
	}
	return p
}
