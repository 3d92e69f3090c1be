package exporter

import (
	"net"
	"sync"
)

// limitListener accepts at most max connections at once: each open connection costs a goroutine
// and TLS and HTTP buffers (connectionBytes), so their number is part of the memory bound. A
// connection beyond the limit is closed at once (refused, counted) rather than left waiting in
// the kernel's backlog, where it would hold nothing here but keep its sender waiting.
type limitListener struct {
	net.Listener
	slots   chan struct{}
	refused func()
}

func newLimitListener(l net.Listener, max int, refused func()) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max), refused: refused}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			_ = c.Close()
			l.refused()
		}
	}
}

// limitConn gives its slot back when closed (once: the HTTP server may close twice).
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// plainHTTPListener notices senders that speak plain HTTP to the TLS port. Go's HTTP server
// answers them "400 Bad Request" itself, before any handler runs; this wrapper sees the first
// bytes of each connection, as the TLS layer reads them, and counts the refusal.
type plainHTTPListener struct {
	net.Listener
	plain func()
}

func (l *plainHTTPListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, plain: l.plain}, nil
}

// sniffConn looks at the first five bytes read from the connection (a TLS record header, or the
// start of an HTTP request line).
type sniffConn struct {
	net.Conn
	plain func()
	head  [5]byte
	n     int
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.n < len(c.head) && n > 0 {
		k := copy(c.head[c.n:], p[:n])
		c.n += k
		if c.n == len(c.head) && looksLikeHTTP(c.head) {
			c.plain()
		}
	}
	return n, err
}

// looksLikeHTTP is net/http's test for a TLS record header that is really an HTTP request line.
func looksLikeHTTP(h [5]byte) bool {
	switch string(h[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}
