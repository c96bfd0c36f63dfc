package main

import (
	"strings"
	"testing"
)

func TestReplaceSectionKeepsOtherSections(t *testing.T) {
	doc := "# Benchmarks\n\n## logstore\n\nappend: 1 GB/s\n"
	once, err := replaceSection(doc, "first run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(once, doc) || !strings.Contains(once, sectionHeading) || !strings.Contains(once, "first run") {
		t.Fatalf("first write:\n%s", once)
	}
	// Another engineer adds a section after ours; a rerun replaces only
	// our body.
	edited := once + "\n## sim\n\nseeds: 1000\n"
	twice, err := replaceSection(edited, "second run")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(twice, "first run") || !strings.Contains(twice, "second run") {
		t.Fatalf("body not replaced:\n%s", twice)
	}
	for _, keep := range []string{"## logstore\n\nappend: 1 GB/s\n", "## sim\n\nseeds: 1000\n"} {
		if !strings.Contains(twice, keep) {
			t.Fatalf("lost %q:\n%s", keep, twice)
		}
	}
	if strings.Count(twice, sectionHeading) != 1 || strings.Count(twice, markerBegin) != 1 {
		t.Fatalf("duplicated heading or markers:\n%s", twice)
	}
	// Rerunning with the same body changes nothing.
	again, _ := replaceSection(twice, "second run")
	if again != twice {
		t.Fatal("not idempotent")
	}
}

func TestReplaceSectionUnderExistingHeadingAndEmptyDoc(t *testing.T) {
	doc := "# Benchmarks\n\n" + sectionHeading + "\n\nold hand-written text\n\n## logstore\n"
	out, err := replaceSection(doc, "body")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Index(out, markerBegin) < strings.Index(out, sectionHeading) || strings.Index(out, "body") > strings.Index(out, "## logstore") {
		t.Fatalf("section not placed under its heading:\n%s", out)
	}
	empty, _ := replaceSection("", "body")
	if !strings.HasPrefix(empty, "# Benchmarks\n") || !strings.Contains(empty, "body") {
		t.Fatalf("empty doc:\n%s", empty)
	}
	if _, err := replaceSection("x\n"+markerBegin+"\n", "body"); err == nil {
		t.Fatal("a lone begin marker must be an error, not a guess")
	}
}
