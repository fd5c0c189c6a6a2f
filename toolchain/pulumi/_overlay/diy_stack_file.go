// appstack's addition to the pinned DIY backend package, compiled into a build-time copy of the
// module (toolchain/pulumi/copy-module, which also calls it from stackPath) and never committed as
// upstream source.
package diy

import "context"

// appstackStackFile is the name a stack's checkpoint has, asked of the bucket by name: the one of
// `names` that exists, or the first when none does (stackPath's answer then too). known is false
// when more than one exists or the bucket fails to answer: stackPath's listing decides then, as
// it does upstream (by the files' times). A file bucket answers each name from the file itself,
// where the listing reads every file of the stacks folder.
func appstackStackFile(ctx context.Context, bucket Bucket, names ...string) (file string, known bool) {
	var found []string
	for _, name := range names {
		exists, err := bucket.Exists(ctx, name)
		if err != nil {
			return "", false
		}
		if exists {
			found = append(found, name)
		}
	}
	switch len(found) {
	case 0:
		return names[0], true
	case 1:
		return found[0], true
	default:
		return "", false
	}
}
