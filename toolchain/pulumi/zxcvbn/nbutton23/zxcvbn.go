// Package zxcvbn stands in for github.com/nbutton23/zxcvbn-go and github.com/ccojocar/zxcvbn-go
// in the pinned Pulumi CLI (toolchain/pulumi/go.mod replaces both with this module). The CLI uses
// them for one thing: `pulumi config set` and `esc env set` refuse a plaintext value that "looks
// like a secret", its key named like one and its zxcvbn entropy high. For that, both libraries
// build their word lists and keyboard graphs in init(): about 80 ms of CPU at every start of the
// CLI, that is of every engine operation appstack runs, for a check its engines never make.
//
// The estimate here is zxcvbn's brute-force one: the length in bytes, as zxcvbn counts it, times
// log2 of the character classes used (a character outside ASCII counts 100 here, 26 or 33 there).
// zxcvbn's entropy is the least over the ways to split the password, brute force among them, so
// it is never above this: a value zxcvbn flags is flagged here too, and one made of dictionary
// words may be flagged here where zxcvbn would not. The error then says to pass --plaintext or
// --secret, as it always did.
package zxcvbn

import "math"

// Strength is the part of zxcvbn's result the CLI reads.
type Strength struct {
	Password string
	Entropy  float64
}

// PasswordStrength estimates the entropy of password in bits. userInputs and filters change
// only zxcvbn's dictionary matching, which this estimate does not do.
func PasswordStrength(password string, userInputs []string, filters ...any) Strength {
	var lower, upper, digit, symbol, other bool
	for _, r := range password {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		case r >= ' ' && r <= '~':
			symbol = true
		default:
			other = true
		}
	}
	cardinality := 0
	for _, class := range []struct {
		used bool
		size int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {symbol, 33}, {other, 100}} {
		if class.used {
			cardinality += class.size
		}
	}
	if cardinality == 0 {
		return Strength{Password: password}
	}
	// In bytes, as zxcvbn counts a password's length.
	return Strength{Password: password, Entropy: float64(len(password)) * math.Log2(float64(cardinality))}
}
