// Package datadriven runs scripted test files, in the style of
// cockroachdb/datadriven: the one runner behind consensus's Raft scenarios
// (consensus/testdata/*.txt) and logstore's file-system scripts
// (logstore/testdata/simfs_crash). A file is a sequence of blocks:
//
//	# comments and blank lines are kept as they are
//	command arg1 key=value key=(1,2,3)
//	----
//	expected output, up to the next blank line
//
// Run calls the test's handler with each command, in order, and compares
// what it returns with the expected output; an empty answer reads "ok".
// Output may not contain blank lines (they end a block). With -rewrite,
// Run writes the actual outputs back into the file instead (then review
// the diff), keeping comments and blank lines as they were.
//
// Only tests import it: it registers the -rewrite flag.
package datadriven
