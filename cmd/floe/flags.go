package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// errUsage is returned after a flag error was already printed.
var errUsage = errors.New("usage")

// exitCode: 2 for usage errors, 1 for everything else.
func exitCode(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// parseFlags parses args, then fills every flag not given on the command
// line from the environment (FLOE_ plus the flag name in upper case with
// dashes as underscores: --data-dir is FLOE_DATA_DIR) and then from the
// config file named by --config or FLOE_CONFIG (lines "name = value" or
// "name: value", # comments). Command line beats environment beats file.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var configPath string
	if fs.Lookup("config") == nil {
		fs.StringVar(&configPath, "config", "", "config `file`: one setting per line, as flag-name = value (e.g. data-dir = /var/lib/floe)")
	}
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var fileErr error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil && fileErr == nil {
				fileErr = fmt.Errorf("%s=%q: %v", envName(f.Name), v, err)
			}
			set[f.Name] = true
		}
	})
	if fileErr != nil {
		return fileErr
	}
	if configPath == "" {
		configPath = os.Getenv("FLOE_CONFIG")
	}
	if configPath == "" {
		return nil
	}
	values, err := readConfigFile(configPath)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		f := fs.Lookup(name)
		if f == nil {
			return fmt.Errorf("%s: unknown setting %q", configPath, name)
		}
		if set[name] {
			continue
		}
		if err := f.Value.Set(values[name]); err != nil {
			return fmt.Errorf("%s: %s = %q: %v", configPath, name, values[name], err)
		}
	}
	return nil
}

func envName(flagName string) string {
	return "FLOE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func readConfigFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	values := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		i := strings.IndexAny(text, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("%s:%d: want `name = value`", path, line)
		}
		name := strings.TrimSpace(text[:i])
		value := strings.Trim(strings.TrimSpace(text[i+1:]), `"`)
		values[name] = value
	}
	return values, sc.Err()
}
