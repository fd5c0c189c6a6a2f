// Package zxcvbn stands in for github.com/ccojocar/zxcvbn-go, a fork of
// github.com/nbutton23/zxcvbn-go, in the pinned Pulumi CLI: see ../nbutton23 for why.
package zxcvbn

import estimate "github.com/nbutton23/zxcvbn-go"

// PasswordStrength is the same estimate as the other stand-in's.
var PasswordStrength = estimate.PasswordStrength
