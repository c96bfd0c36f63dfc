// Package kafka is runtime: sockets and goroutines are its job.
package kafka

import "net"

func serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go c.Close()
	}
}
