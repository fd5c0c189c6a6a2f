module github.com/ccojocar/zxcvbn-go

go 1.22

require github.com/nbutton23/zxcvbn-go v0.0.0-20180912185939-ae427f1e4c1d
