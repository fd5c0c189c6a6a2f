// kstatus: how sigs.k8s.io/cli-utils/pkg/kstatus (the health library of Flux, kapply and Config
// Sync) reads objects. It reads a stream of JSON objects on stdin, as the API server returns them,
// and prints one line of JSON per object: {"status": "InProgress", "message": "..."}, where status
// is Current, InProgress, Failed, Terminating or Unknown. The e2e tests run it on Apps and
// Memcacheds in every state; it is not part of the operator.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type reading struct {
	Status  status.Status `json:"status"`
	Message string        `json:"message"`
}

func main() {
	decoder := json.NewDecoder(os.Stdin)
	encoder := json.NewEncoder(os.Stdout)
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			fail(err)
		}
		// UnmarshalJSON, not encoding/json into a map: kstatus reads generations as int64, which
		// plain decoding would leave as float64.
		object := &unstructured.Unstructured{}
		if err := object.UnmarshalJSON(raw); err != nil {
			fail(err)
		}
		result, err := status.Compute(object)
		if err != nil {
			fail(err)
		}
		if err := encoder.Encode(reading{Status: result.Status, Message: result.Message}); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kstatus:", err)
	os.Exit(1)
}
