module appstack.dev/toolchain/pause

go 1.26.8
