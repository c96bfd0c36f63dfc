package main

import (
	"fmt"
	"os"
)

type command struct {
	name    string
	summary string
	run     func(args []string) error
}

var commands []command

func addCommand(name, summary string, run func([]string) error) {
	commands = append(commands, command{name, summary, run})
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: floe <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'floe <command> -h' for a command's flags.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	for _, c := range commands {
		if c.name == os.Args[1] {
			if err := c.run(os.Args[2:]); err != nil {
				if err != errUsage {
					fmt.Fprintf(os.Stderr, "floe %s: %v\n", c.name, err)
				}
				os.Exit(exitCode(err))
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "floe: unknown command %q\n\n", os.Args[1])
	usage()
	os.Exit(2)
}
