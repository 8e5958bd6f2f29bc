// Command modcheck checks what a user of goshmem downloads and builds:
//
//   - the module zip, made as the go command makes it for `go get`
//     (golang.org/x/mod/zip over the repository at a revision), is at most
//     -zip bytes;
//   - every go.mod of the repository names its go version without a patch
//     level (go 1.26, not go 1.26.8), so a consumer's toolchain is not
//     forced up to one patch release;
//   - a throwaway consumer module that requires goshmem (replaced by the
//     checkout) and imports package shmem has at most -mods modules in
//     `go list -m all` after `go mod tidy`, goshmem itself included and the
//     consumer left out;
//   - examples/hello, built as `go build` builds it, is at most -hello bytes.
//
// It prints each number and exits 1 when one is over its limit. Run it from
// its own folder (`make modcheck` does): go run . -root ../..
package main

import (
	stdzip "archive/zip"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

const modPath = "github.com/goshmem/goshmem"

func main() {
	root := flag.String("root", "../..", "the repository root")
	rev := flag.String("rev", "HEAD", "the revision whose module zip is measured")
	maxZip := flag.Int64("zip", 3<<20, "the largest module zip, in bytes")
	maxMods := flag.Int("mods", 25, "the most modules a program importing shmem may inherit")
	maxHello := flag.Int64("hello", 12<<20, "the largest examples/hello binary, in bytes")
	flag.Parse()
	dir, err := filepath.Abs(*root)
	if err == nil {
		err = run(dir, *rev, *maxZip, *maxMods, *maxHello)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modcheck:", err)
		os.Exit(1)
	}
}

func run(root, rev string, maxZip int64, maxMods int, maxHello int64) error {
	var failed []string
	check := func(what string, got, limit int64, unit string) {
		verdict := "ok"
		if got > limit {
			verdict = "OVER"
			failed = append(failed, what)
		}
		fmt.Printf("modcheck: %-36s %12d %s (limit %d): %s\n", what, got, unit, limit, verdict)
	}

	size, files, err := zipSize(root, rev)
	if err != nil {
		return err
	}
	check(fmt.Sprintf("module zip at %s (%d files)", rev, files), size, maxZip, "bytes")

	bad, err := goLines(root)
	if err != nil {
		return err
	}
	for _, b := range bad {
		fmt.Printf("modcheck: %s: the go line has a patch level\n", b)
		failed = append(failed, b)
	}
	if len(bad) == 0 {
		fmt.Println("modcheck: every go.mod's go line names a language version without a patch level: ok")
	}

	mods, err := consumerModules(root)
	if err != nil {
		return err
	}
	check("modules a shmem program inherits", int64(len(mods)), int64(maxMods), "modules")

	hello, err := helloSize(root)
	if err != nil {
		return err
	}
	check("examples/hello binary", hello, maxHello, "bytes")

	if len(failed) > 0 {
		return fmt.Errorf("over the limit: %s", strings.Join(failed, "; "))
	}
	return nil
}

// zipSize builds the module zip of rev as the go command does for a
// version fetched from the repository (files of nested modules, vendor/
// and such are left out by zip.CreateFromVCS) and returns its size and
// its number of files.
func zipSize(root, rev string) (int64, int, error) {
	var buf bytes.Buffer
	if err := zip.CreateFromVCS(&buf, module.Version{Path: modPath, Version: "v0.0.0"}, root, rev, ""); err != nil {
		return 0, 0, fmt.Errorf("building the module zip of %s: %w", rev, err)
	}
	r, err := stdzip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		return 0, 0, err
	}
	return int64(buf.Len()), len(r.File), nil
}

// goLines lists the go.mod files tracked in the repository whose go line
// has a patch level.
func goLines(root string) ([]string, error) {
	out, err := command(root, nil, "git", "ls-files", "--", "go.mod", "**/go.mod")
	if err != nil {
		return nil, err
	}
	var bad []string
	patch := regexp.MustCompile(`^\d+\.\d+\.`)
	for _, p := range strings.Fields(out) {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return nil, err
		}
		f, err := modfile.ParseLax(p, b, nil)
		if err != nil {
			return nil, err
		}
		if f.Go == nil || patch.MatchString(f.Go.Version) {
			bad = append(bad, p)
		}
	}
	return bad, nil
}

// consumerModules makes a module in a temporary folder that requires
// goshmem (replaced by the checkout) and imports shmem, tidies it and
// returns `go list -m all` without the consumer itself.
func consumerModules(root string) ([]string, error) {
	dir, err := os.MkdirTemp("", "modcheck-consumer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	gomod := fmt.Sprintf("module modcheck.test/consumer\n\ngo 1.26\n\nrequire %s v0.0.0\n\nreplace %s => %s\n", modPath, modPath, root)
	main := fmt.Sprintf("package main\n\nimport _ %q\n\nfunc main() {}\n", modPath+"/shmem")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		return nil, err
	}
	// The consumer is not inside a workspace: GOWORK=off; GOFLAGS as set
	// by the caller could add -mod=vendor and such: cleared.
	env := []string{"GOWORK=off", "GOFLAGS="}
	if _, err := command(dir, env, "go", "mod", "tidy"); err != nil {
		return nil, err
	}
	out, err := command(dir, env, "go", "list", "-m", "all")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[1:], nil
}

// helloSize builds examples/hello with the default flags and returns the
// size of the binary.
func helloSize(root string) (int64, error) {
	dir, err := os.MkdirTemp("", "modcheck-hello-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "hello")
	if _, err := command(root, []string{"GOWORK=off"}, "go", "build", "-o", bin, "./examples/hello"); err != nil {
		return 0, err
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// command runs name with args in dir (env added to the environment) and
// returns its standard output; a failure carries its standard error.
func command(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
