// Command patch-module makes a patched copy of the Go module a tool of the toolchain pins: the
// pinned module's folder in the module cache, copied, with the tool's patches (<tool>/patches/*.patch,
// in name order) applied exactly, and optionally a go.mod for the build that replaces the module
// with the copy. toolchain/build.ts and the Dockerfile both run it, so that the recipe is written
// once. Nothing of upstream's is committed: only the patches.
//
//	go -C toolchain/patch-module run . -module <module path> -into <folder> [-modfile <file.mod>] <tool folder>
//
// It prints the copy's folder: <folder>/<module>@<version>-<digest of the patches>. The copy is
// made beside it under a name of its own and renamed into place once whole, so two builds at once
// never see each other's partial copy, and a copy in place is never changed again: a build that
// finds it uses it. The name is the same wherever the same patches meet the same pin, which keeps
// the Go build cache's keys (they hold a package's folder) the same for the host's build and the
// image's (toolchain/images: the image build passes the host's folder, docs/development/toolchain.md).
//
// A patch that does not apply, or whose header lacks a field, stops it with the patch's name.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	module := flag.String("module", "", "the module to patch, as the tool folder's go.mod requires it")
	into := flag.String("into", "", "the folder that holds the patched copies")
	modfile := flag.String("modfile", "", "if set, write here the tool's go.mod with the module replaced by the copy, and its go.sum beside it (<name>.sum)")
	flag.Parse()
	if *module == "" || *into == "" || flag.NArg() != 1 {
		fail("usage: patch-module -module <module path> -into <folder> [-modfile <file.mod>] <tool folder>")
	}
	toolDir := flag.Arg(0)
	copy, err := patchedCopy(toolDir, *module, *into)
	if err == nil && *modfile != "" {
		err = writeModfile(toolDir, *module, copy, *modfile)
	}
	if err != nil {
		fail(err.Error())
	}
	fmt.Println(copy)
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "patch-module:", message)
	os.Exit(1)
}

// The pinned module, as `go mod download -json` describes it.
type pinned struct {
	Path, Version, Dir, Error string
}

// download fetches the version of module that toolDir's go.mod requires, if the module cache lacks it.
func download(toolDir, module string) (pinned, error) {
	command := exec.Command("go", "mod", "download", "-json", module)
	command.Dir = toolDir
	command.Stderr = os.Stderr
	out, err := command.Output()
	var pin pinned
	if jsonErr := json.Unmarshal(out, &pin); jsonErr != nil || pin.Error != "" || pin.Dir == "" {
		return pin, fmt.Errorf("go mod download %s in %s: %v %s", module, toolDir, err, pin.Error)
	}
	return pin, nil
}

// readPatches reads <toolDir>/patches/*.patch in name order.
func readPatches(toolDir string) ([]*patch, error) {
	paths, err := filepath.Glob(filepath.Join(toolDir, "patches", "*.patch"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s has no patches/*.patch", toolDir)
	}
	sort.Strings(paths)
	patches := make([]*patch, 0, len(paths))
	for _, path := range paths {
		p, err := readPatch(path)
		if err != nil {
			return nil, err
		}
		patches = append(patches, p)
	}
	return patches, nil
}

func patchedCopy(toolDir, module, into string) (string, error) {
	// The copy's path goes into a go.mod, where a relative one would be read from the go.mod's folder.
	into, err := filepath.Abs(into)
	if err != nil {
		return "", err
	}
	patches, err := readPatches(toolDir)
	if err != nil {
		return "", err
	}
	pin, err := download(toolDir, module)
	if err != nil {
		return "", err
	}
	name, err := copyName(pin, patches)
	if err != nil {
		return "", err
	}
	return placeCopy(pin.Dir, patches, into, name)
}

// copyName names a copy by what it holds: the module, its version, and the patches' names and bytes.
func copyName(pin pinned, patches []*patch) (string, error) {
	digest := sha256.New()
	for _, p := range patches {
		text, err := os.ReadFile(p.path)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(digest, "%s\n%d\n", filepath.Base(p.path), len(text))
		digest.Write(text)
	}
	return fmt.Sprintf("%s@%s-%s", strings.ReplaceAll(pin.Path, "/", "+"), pin.Version, hex.EncodeToString(digest.Sum(nil))[:12]), nil
}

// placeCopy makes <into>/<name>, a copy of source with the patches applied, unless it exists.
func placeCopy(source string, patches []*patch, into, name string) (string, error) {
	final := filepath.Join(into, name)
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(into, 0o755); err != nil {
		return "", err
	}
	removeAbandoned(into)
	partial, err := os.MkdirTemp(into, "."+name+".partial-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(partial) // nothing left to remove once renamed
	if err := os.Chmod(partial, 0o755); err != nil {
		return "", err
	}
	if err := copyTree(source, partial); err != nil {
		return "", err
	}
	for _, p := range patches {
		if err := p.apply(partial); err != nil {
			return "", err
		}
	}
	if err := os.Rename(partial, final); err != nil {
		// Another build placed the same copy first: the same patches on the same pin, so the same files.
		if _, statErr := os.Stat(final); statErr == nil {
			return final, nil
		}
		return "", err
	}
	return final, nil
}

// A partial copy older than this is a killed build's (a copy takes seconds).
const abandoned = time.Hour

// removeAbandoned removes the partial copies that killed builds left in into.
func removeAbandoned(into string) {
	entries, _ := os.ReadDir(into)
	for _, entry := range entries {
		if !strings.HasPrefix(entry.Name(), ".") || !strings.Contains(entry.Name(), ".partial-") {
			continue
		}
		if info, err := entry.Info(); err == nil && time.Since(info.ModTime()) > abandoned {
			_ = os.RemoveAll(filepath.Join(into, entry.Name()))
		}
	}
}

// copyTree copies the module's files, writable (the module cache's are read-only).
func copyTree(source, target string) error {
	return filepath.WalkDir(source, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		relative, err := filepath.Rel(source, path)
		if err != nil {
			return err
		}
		to := filepath.Join(target, relative)
		if entry.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !entry.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, text, 0o644)
	})
}

// writeModfile writes the tool's go.mod with the module replaced by the copy, and its go.sum beside
// it: `go build -modfile` reads <name>.sum. The tool's own `replace ./...` lines stay as they are:
// Go reads them relative to the tool's folder, where the build runs.
func writeModfile(toolDir, module, copy, modfile string) error {
	if !strings.HasSuffix(modfile, ".mod") {
		return errors.New("-modfile must end in .mod")
	}
	goMod, err := os.ReadFile(filepath.Join(toolDir, "go.mod"))
	if err != nil {
		return err
	}
	if bytes.Contains(goMod, []byte("replace "+module+" ")) {
		return fmt.Errorf("%s/go.mod replaces %s already", toolDir, module)
	}
	goSum, err := os.ReadFile(filepath.Join(toolDir, "go.sum"))
	if err != nil {
		return err
	}
	text := fmt.Sprintf("%s\nreplace %s => %s\n", goMod, module, copy)
	if err := os.WriteFile(modfile, []byte(text), 0o644); err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(modfile, ".mod")+".sum", goSum, 0o644)
}
