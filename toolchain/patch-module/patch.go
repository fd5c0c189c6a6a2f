package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// A patch file: a header of fields in the form of Debian's DEP-3 ("Name: value", continued on
// lines that start with a space, ended by a line "---"), then a unified diff in git's form, paths
// relative to the module's root.
type patch struct {
	// The file as it was named to the command: every error names it.
	path   string
	fields map[string]string
	files  []*gitdiff.File
}

// The fields every patch's header gives: what it changes and why (Description), what that gains,
// measured and where the figure is (Gain), the upstream issue or pull request or that none was
// found (Bug), whether it was sent upstream or the text to send (Forwarded), and when it can go
// (Drop-when).
var requiredFields = []string{"Description", "Gain", "Bug", "Forwarded", "Drop-when"}

func readPatch(path string) (*patch, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	files, preamble, err := gitdiff.Parse(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no diff in it", path)
	}
	fields := headerFields(preamble)
	for _, name := range requiredFields {
		if strings.TrimSpace(fields[name]) == "" {
			return nil, fmt.Errorf("%s: its header has no %s field (every patch says %s)", path, name, strings.Join(requiredFields, ", "))
		}
	}
	return &patch{path: path, fields: fields, files: files}, nil
}

// headerFields reads the header's fields; lines that start with a space continue the field before.
func headerFields(preamble string) map[string]string {
	fields := map[string]string{}
	last := ""
	for _, line := range strings.Split(preamble, "\n") {
		if line == "---" {
			break
		}
		if strings.HasPrefix(line, " ") && last != "" {
			fields[last] += "\n" + strings.TrimSpace(line)
			continue
		}
		if name, value, ok := strings.Cut(line, ":"); ok && !strings.ContainsAny(name, " \t") && name != "" {
			last = name
			fields[name] = strings.TrimSpace(value)
		}
	}
	return fields
}

// apply makes the patch's changes to the tree at root, exactly as written: every hunk at its line
// numbers and with its context lines as they are (go-gitdiff's strict mode: no fuzz, no offset).
// A file the patch adds must not exist yet.
func (p *patch) apply(root string) error {
	for _, file := range p.files {
		if err := applyFile(root, file); err != nil {
			return fmt.Errorf("%s does not apply: %s: %w", p.path, fileName(file), err)
		}
	}
	return nil
}

func fileName(file *gitdiff.File) string {
	if file.IsNew {
		return file.NewName
	}
	return file.OldName
}

func applyFile(root string, file *gitdiff.File) error {
	if file.IsCopy || file.IsRename {
		return errors.New("a copy or a rename: not supported, write it as an addition and a deletion")
	}
	var src []byte
	if file.IsNew {
		target, err := inside(root, file.NewName)
		if err != nil {
			return err
		}
		if _, err := os.Lstat(target); err == nil {
			return errors.New("the patch adds this file, and upstream has it already")
		}
	} else {
		source, err := inside(root, file.OldName)
		if err != nil {
			return err
		}
		if src, err = os.ReadFile(source); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	if err := gitdiff.Apply(&out, bytes.NewReader(src), file); err != nil {
		var located *gitdiff.ApplyError
		if errors.As(err, &located) && located.Line > 0 {
			return fmt.Errorf("hunk %d, at line %d: %w", located.Fragment, located.Line, err)
		}
		return err
	}
	if file.IsDelete {
		source, _ := inside(root, file.OldName)
		return os.Remove(source)
	}
	target, err := inside(root, file.NewName)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if file.NewMode&0o111 != 0 {
		mode = 0o755
	}
	return os.WriteFile(target, out.Bytes(), mode)
}

// inside is name under root, refusing a name that would leave it.
func inside(root, name string) (string, error) {
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("%q is not a path inside the module", name)
	}
	return filepath.Join(root, name), nil
}
