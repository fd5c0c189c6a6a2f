package main

// The operator's line to its slot provider, on the provider's standard input: one JSON object
// per line, the environment of the next operation (a name to a string, or to null to unset it),
// acknowledged with "ok" on standard output once set, so that the operator starts the engine
// only after. One engine uses a slot at a time, so a provider's Configure reads the environment
// of the operation it serves. The end of the input is the operator's end: the provider exits
// rather than outlive it (a process killed with SIGKILL gets no chance to stop its children).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

func followControl(in io.Reader, out io.Writer, operatorGone func()) {
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		var env map[string]*string
		if err := json.Unmarshal(lines.Bytes(), &env); err != nil {
			_, _ = fmt.Fprintf(out, "error: %v\n", err)
			continue
		}
		for name, value := range env {
			if value == nil {
				_ = os.Unsetenv(name)
			} else {
				_ = os.Setenv(name, *value)
			}
		}
		_, _ = fmt.Fprintln(out, "ok")
	}
	operatorGone()
}
