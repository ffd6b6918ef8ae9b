// Package slowloris is test support: a client that sends a request a byte
// at a time, as a slow-loris attack does, and reports when and how the
// server ended the connection.
package slowloris

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// Result is how the server ended a trickled request.
type Result struct {
	// Elapsed runs from the dial to the server's close: never shorter than
	// the time the server gave the request, whose clock can only start once
	// the connection is made (timed from the first byte sent, a client
	// descheduled after its dial would see a server on time as early).
	Elapsed time.Duration
	// Response is what the server wrote before closing (maybe nothing).
	Response string
	// Sent counts the bytes sent before the close.
	Sent int
}

// Body sends head (the request line and headers, blank line included) at
// once, then a body one byte every interval, without end, until the server
// closes the connection. It fails if the server has not closed it after
// giveUp.
func Body(addr, head string, every, giveUp time.Duration) (Result, error) {
	return trickle(addr, head, "", every, giveUp)
}

// Headers sends the request head itself one byte every interval.
func Headers(addr, head string, every, giveUp time.Duration) (Result, error) {
	return trickle(addr, "", head, every, giveUp)
}

func trickle(addr, atOnce, slowly string, every, giveUp time.Duration) (Result, error) {
	start := time.Now()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, atOnce); err != nil {
		return Result{}, err
	}
	sent := make(chan int, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		n := len(atOnce)
		defer func() { sent <- n }()
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			b := byte('x')
			if i < len(slowly) {
				b = slowly[i]
			}
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
			n++
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	if err := conn.SetReadDeadline(start.Add(giveUp)); err != nil {
		return Result{}, err
	}
	var resp strings.Builder
	_, err = io.Copy(&resp, conn)
	elapsed := time.Since(start)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return Result{}, fmt.Errorf("the server still held the connection after %v", giveUp)
	case err != nil && !errors.Is(err, syscall.ECONNRESET):
		return Result{}, fmt.Errorf("read: %w", err)
	}
	// The server closed (or reset) the connection: stop sending.
	conn.Close()
	return Result{Elapsed: elapsed, Response: resp.String(), Sent: <-sent}, nil
}
