// Command copy-module copies the pinned github.com/pulumi/pulumi/pkg/v3 module (its folder in the
// module cache) to a build-time folder that the CLI's build replaces the module with, and there
// makes appstack's changes to it: the files of ../_overlay added to the packages they name, and
// the rewrites below, each of a text that must be found exactly once (a new pin that changed it
// stops the build rather than building without it). Run by toolchain/build.ts and the Dockerfile;
// nothing of upstream's is committed.
//
//	go run ./copy-module <module folder> <copy>
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A rewrite of one upstream text, in a file of the module.
type rewrite struct {
	file      string
	published string
	rewritten string
}

// The checkpoint's name: the DIY backend's stackPath lists the project's whole stacks folder
// (four files per stack) to learn which of three names the checkpoint has, on every checkpoint
// write, about ten per `pulumi up` of a new App: at 1,000 stacks two fifths of the CLI's CPU, a
// cost that grows with the number of stacks. Asked by name instead (appstackStackFile, in
// ../_overlay/diy_stack_file.go); the listing still decides when more than one name exists.
var stackPathByName = rewrite{
	file: "backend/diy/state.go",
	published: "\tbucketIter := b.bucket.List(&blob.ListOptions{\n" +
		"\t\tDelimiter: \"/\",\n" +
		"\t\tPrefix:    plainPath,\n" +
		"\t})\n",
	rewritten: "\tif file, known := appstackStackFile(ctx, b.bucket, plainPath, gzipPath, zstdPath); known {\n" +
		"\t\treturn file\n" +
		"\t}\n" +
		"\tbucketIter := b.bucket.List(&blob.ListOptions{\n" +
		"\t\tDelimiter: \"/\",\n" +
		"\t\tPrefix:    plainPath,\n" +
		"\t})\n",
}

var rewrites = []rewrite{stackPathByName}

// The overlay files: ../_overlay/<name>.go goes to <package>/zz_appstack_<name>.go.
var overlays = map[string]string{"diy_stack_file.go": "backend/diy"}

func main() {
	if len(os.Args) != 3 {
		fail("usage: copy-module <module folder> <copy>")
	}
	source, copy := os.Args[1], os.Args[2]
	if err := copyTree(source, copy); err != nil {
		fail(err.Error())
	}
	for _, change := range rewrites {
		if err := apply(copy, change); err != nil {
			fail(err.Error())
		}
	}
	for name, pkg := range overlays {
		// Run from toolchain/pulumi (`go run ./copy-module`).
		text, err := os.ReadFile(filepath.Join("_overlay", name))
		if err == nil {
			err = os.WriteFile(filepath.Join(copy, pkg, "zz_appstack_"+name), text, 0o644)
		}
		if err != nil {
			fail(err.Error())
		}
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "copy-module:", message)
	os.Exit(1)
}

// copyTree copies the module's files, writable (the module cache's are read-only).
func copyTree(source, copy string) error {
	return filepath.WalkDir(source, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(copy, strings.TrimPrefix(path, source))
		if entry.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, text, 0o644)
	})
}

func apply(copy string, change rewrite) error {
	path := filepath.Join(copy, change.file)
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if found := strings.Count(string(text), change.published); found != 1 {
		return fmt.Errorf("%s: the text to rewrite is there %d times, not once: the pin changed it; see toolchain/pulumi/copy-module", change.file, found)
	}
	return os.WriteFile(path, []byte(strings.Replace(string(text), change.published, change.rewritten, 1)), 0o644)
}
