// Command floe is Floe's single binary: the broker (floe serve), the admin
// CLI (floe topic ...), kcat-like produce and consume for scripts, the
// benchmark tool and the simulator's replay.
package main
