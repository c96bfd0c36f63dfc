// Command floe is not core.
package main

import "os"

func main() { go os.Exit(0) }
