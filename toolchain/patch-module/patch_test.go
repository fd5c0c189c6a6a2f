package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const header = `Description: say hello twice
 A test patch.
Gain: none, a test
Bug: none
Forwarded: no
Drop-when: never
---
`

const upstream = "package hello\n\nfunc Hello() string {\n\treturn \"hello\"\n}\n"

const diff = `diff --git a/hello/hello.go b/hello/hello.go
--- a/hello/hello.go
+++ b/hello/hello.go
@@ -1,5 +1,5 @@
 package hello
 
 func Hello() string {
-	return "hello"
+	return "hello, hello"
 }
diff --git a/hello/added.go b/hello/added.go
new file mode 100644
--- /dev/null
+++ b/hello/added.go
@@ -0,0 +1,3 @@
+package hello
+
+const Added = true
`

// A fake module (hello/hello.go) and a tool folder with one patch to it.
func fixture(t *testing.T, upstreamText, patchText string) (module, toolDir string) {
	t.Helper()
	module, toolDir = t.TempDir(), t.TempDir()
	write(t, filepath.Join(module, "hello", "hello.go"), upstreamText)
	write(t, filepath.Join(toolDir, "patches", "0001-hello-twice.patch"), patchText)
	return module, toolDir
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

func patchFixture(t *testing.T, upstreamText, patchText string) (string, []*patch, error) {
	t.Helper()
	module, toolDir := fixture(t, upstreamText, patchText)
	patches, err := readPatches(toolDir)
	if err != nil {
		return "", nil, err
	}
	return module, patches, nil
}

func TestPatchApplies(t *testing.T) {
	module, patches, err := patchFixture(t, upstream, header+diff)
	if err != nil {
		t.Fatal(err)
	}
	into := t.TempDir()
	copy, err := placeCopy(module, patches, into, "hello@v1")
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(copy, "hello", "hello.go")); !strings.Contains(got, `return "hello, hello"`) {
		t.Errorf("hello.go not patched:\n%s", got)
	}
	if got := read(t, filepath.Join(copy, "hello", "added.go")); got != "package hello\n\nconst Added = true\n" {
		t.Errorf("added.go: %q", got)
	}
	if got := read(t, filepath.Join(module, "hello", "hello.go")); got != upstream {
		t.Errorf("the module itself was changed")
	}
	if patches[0].fields["Description"] != "say hello twice\nA test patch." {
		t.Errorf("Description: %q", patches[0].fields["Description"])
	}
}

// A new pin whose text the patch no longer matches stops the copy, naming the patch and the file,
// and leaves nothing behind: no copy and no partial copy.
func TestChangedUpstreamFailsNamingThePatch(t *testing.T) {
	for name, changed := range map[string]string{
		"a changed line":         strings.Replace(upstream, `return "hello"`, `return "hi"`, 1),
		"a changed context line": strings.Replace(upstream, "func Hello() string {", "func Hello() (s string) {", 1),
		"the same text, one line further down (no offset is allowed)": "// Package hello.\n" + upstream,
	} {
		t.Run(name, func(t *testing.T) {
			module, patches, err := patchFixture(t, changed, header+diff)
			if err != nil {
				t.Fatal(err)
			}
			into := t.TempDir()
			_, err = placeCopy(module, patches, into, "hello@v2")
			if err == nil {
				t.Fatal("the patch applied to a changed upstream")
			}
			for _, want := range []string{"0001-hello-twice.patch does not apply", "hello/hello.go"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error %q does not say %q", err, want)
				}
			}
			if left, _ := os.ReadDir(into); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

func TestAFileTheUpstreamAddedFailsThePatch(t *testing.T) {
	module, patches, err := patchFixture(t, upstream, header+diff)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(module, "hello", "added.go"), "package hello\n")
	if _, err := placeCopy(module, patches, t.TempDir(), "hello@v3"); err == nil || !strings.Contains(err.Error(), "hello/added.go: the patch adds this file") {
		t.Fatalf("got %v", err)
	}
}

func TestAPatchWithoutItsHeaderIsRefused(t *testing.T) {
	withoutDropWhen := strings.Replace(header, "Drop-when: never\n", "", 1)
	_, _, err := patchFixture(t, upstream, withoutDropWhen+diff)
	if err == nil || !strings.Contains(err.Error(), "0001-hello-twice.patch: its header has no Drop-when field") {
		t.Fatalf("got %v", err)
	}
}

// Builds at once make the same copy: each its own partial copy, one renamed into place, the others
// using it; none sees another's partial copy, and nothing partial is left.
func TestCopiesAtOnceDoNotClobber(t *testing.T) {
	module, patches, err := patchFixture(t, upstream, header+diff)
	if err != nil {
		t.Fatal(err)
	}
	into := t.TempDir()
	var wait sync.WaitGroup
	results := make([]string, 8)
	errs := make([]error, 8)
	for i := range results {
		wait.Add(1)
		go func() {
			defer wait.Done()
			results[i], errs[i] = placeCopy(module, patches, into, "hello@v4")
		}()
	}
	wait.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if results[i] != filepath.Join(into, "hello@v4") {
			t.Errorf("copy %d at %s", i, results[i])
		}
	}
	if got := read(t, filepath.Join(into, "hello@v4", "hello", "hello.go")); !strings.Contains(got, `"hello, hello"`) {
		t.Errorf("hello.go: %s", got)
	}
	if left, _ := os.ReadDir(into); len(left) != 1 {
		t.Errorf("in %s: %v", into, left)
	}
}

// A killed build's partial copy is removed by the next build once it is an hour old, not before.
func TestAbandonedPartialCopiesAreRemoved(t *testing.T) {
	module, patches, err := patchFixture(t, upstream, header+diff)
	if err != nil {
		t.Fatal(err)
	}
	into := t.TempDir()
	old, recent := filepath.Join(into, ".hello@v5.partial-1"), filepath.Join(into, ".hello@v5.partial-2")
	for _, dir := range []string{old, recent} {
		write(t, filepath.Join(dir, "hello", "hello.go"), upstream)
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if _, err := placeCopy(module, patches, into, "hello@v5"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the abandoned copy is still there: %v", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("a recent partial copy was removed: %v", err)
	}
}

// The toolchain's own patches apply to the modules its go.mod files pin, each giving a copy named
// by its module, version and patches; a changed upstream text fails naming the real patch.
func TestThePinnedModulesTakeTheirPatches(t *testing.T) {
	for _, tool := range []struct{ dir, module, added string }{
		{"../pulumi", "github.com/pulumi/pulumi/pkg/v3", "backend/diy/zz_appstack_stack_file.go"},
		{"../kubernetes-provider", "github.com/pulumi/pulumi-kubernetes/provider/v4", "pkg/provider/zz_appstack_attached.go"},
	} {
		t.Run(tool.module, func(t *testing.T) {
			copy, err := patchedCopy(tool.dir, tool.module, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(filepath.Base(copy), strings.ReplaceAll(tool.module, "/", "+")+"@v") {
				t.Errorf("copy named %s", copy)
			}
			if _, err := os.Stat(filepath.Join(copy, tool.added)); err != nil {
				t.Error(err)
			}
		})
	}

	// The DIY backend's state.go of the pin, with the line before the patched one changed.
	pin, err := download("../pulumi", "github.com/pulumi/pulumi/pkg/v3")
	if err != nil {
		t.Fatal(err)
	}
	state := read(t, filepath.Join(pin.Dir, "backend", "diy", "state.go"))
	module := t.TempDir()
	write(t, filepath.Join(module, "backend", "diy", "state.go"), strings.Replace(state, "zstdPath := plainPath + encoding.ZSTDExt", "zstdPath := plainPath + \".zst\"", 1))
	patches, err := readPatches("../pulumi")
	if err != nil {
		t.Fatal(err)
	}
	_, err = placeCopy(module, patches, t.TempDir(), "changed")
	if err == nil || !strings.Contains(err.Error(), "0001-diy-stack-file-by-name.patch does not apply: backend/diy/state.go") {
		t.Fatalf("got %v", err)
	}
}
