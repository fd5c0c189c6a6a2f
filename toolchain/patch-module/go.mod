module appstack.dev/toolchain/patch-module

go 1.26.8

require github.com/bluekeyes/go-gitdiff v0.9.0
