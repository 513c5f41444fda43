// A lockharness client (docs/client-protocol.md) that translates the protocol to
// go-redsync/redsync v4 over one go-redis pool per node: Redlock over independent
// masters, exactly as the library does it, with nothing added. What differs between
// releases lives in api.go (v4.12.0 on, go-redis v9) and api_v4_0.go (every v4 release
// before, go-redis v8: build tag redsync_v4_0).
//
// It speaks protocol 2 (and 1, for a worker that offers only 1): a certain failure is
// `refused` with the library's error as the reason (version 1: `granted: false`).
//
// Mapping of redsync's outcomes (redsync's mutex.go, error.go; v4.12.0 on: api_v4_0.go says
// how older releases differ):
//
//	acquire: TryLock (= WithTries(1)) returns nil -> granted. Any error is the library's
//	  refusal: it has already sent its release to every node, and its caller would not
//	  hold the lock, so refused whether the nodes refused (ErrTaken, ErrNodeTaken),
//	  or failed (RedisError); the error text is the reason.
//	release: Unlock counts the nodes whose compare-and-delete returned 1; true when they
//	  are a quorum. Otherwise it returns false and, per node, ErrLockAlreadyExpired (key
//	  gone), ErrNodeTaken (another value; ErrTaken alone when that is a quorum) or
//	  RedisError (no answer: that node may or may not have deleted). released false when
//	  the nodes that did answer prove that no quorum deleted; error when the nodes that
//	  failed could have completed a quorum (the outcome is unknown).
//	extend: Extend is the same count with a compare-and-PEXPIRE; true -> granted with the
//	  new Until(); false with ErrExtendFailed (quorum, but no validity left) -> refused; a
//	  failure that the unanswered nodes could have turned into a quorum -> error. A failed
//	  Extend deletes nothing: the lease keeps its old expiry (no `lost`).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"runtime/debug"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
)

const module = "github.com/go-redsync/redsync/v4"

type node struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

type lease struct {
	Key   string `json:"key"`
	Token string `json:"token"`
}

type request struct {
	ID        *int64         `json:"id"`
	Op        string         `json:"op"`
	Protocol  int            `json:"protocol"`
	Protocols []int          `json:"protocols"`
	Nodes     []node         `json:"nodes"`
	Options   map[string]any `json:"options"`
	Key       string         `json:"key"`
	TTLMs     int64          `json:"ttl_ms"`
	Lease     *lease         `json:"lease"`
}

type reply map[string]any

type client struct {
	version int // the protocol version agreed at init
	rs      *redsync.Redsync
	clients []closer
	quorum  int
	held    map[string]heldLock // token -> the mutex that acquired (or last extended) it
}

type heldLock struct {
	m     *redsync.Mutex
	key   string
	ttlMs int64 // the mutex's expiry: redsync keeps it private, and fixes it at NewMutex
}

func main() {
	log.SetOutput(os.Stderr)
	log.SetPrefix("redsync-client: ")
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	c := &client{held: map[string]heldLock{}}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			r, exit := c.serve(line)
			if data, merr := json.Marshal(r); merr == nil {
				out.Write(append(data, '\n'))
				out.Flush()
			}
			if exit {
				c.close()
				os.Exit(exitCode(r))
			}
		}
		if err != nil { // io.EOF: stdin closed
			c.close()
			return
		}
	}
}

// exitCode: 0 after close, 1 after a refused init (an unknown protocol version).
func exitCode(r reply) int {
	if _, failed := r["error"]; failed {
		return 1
	}
	return 0
}

// serve answers one line; exit is true after close or a refused init.
func (c *client) serve(line []byte) (r reply, exit bool) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return reply{"id": nil, "error": "malformed request: " + err.Error()}, false
	}
	if req.ID == nil {
		return reply{"id": nil, "error": "malformed request: no id"}, false
	}
	id := *req.ID
	fail := func(format string, args ...any) reply {
		return reply{"id": id, "error": fmt.Sprintf(format, args...)}
	}
	if req.Op != "init" && req.Op != "close" && c.rs == nil {
		return fail("%q before init", req.Op), false
	}
	switch req.Op {
	case "init":
		version := negotiate(req)
		if version == 0 {
			return fail("unsupported protocols %v (this program speaks 1 and 2)", req.Protocols), true
		}
		if c.rs != nil {
			return fail("init twice"), false
		}
		if len(req.Nodes) == 0 {
			return fail("init without nodes"), false
		}
		timeout, err := timeoutOption(req.Options)
		if err != nil {
			return fail("%v", err), false
		}
		c.init(req.Nodes, timeout)
		c.version = version
		ready := reply{"id": id, "ok": true, "name": libraryName(), "abilities": []string{"extend"}}
		if version == 2 {
			ready["protocol"] = 2
		}
		return ready, false
	case "acquire":
		if req.Key == "" || req.TTLMs <= 0 {
			return fail("acquire needs key and a positive ttl_ms"), false
		}
		return c.acquire(id, req.Key, req.TTLMs), false
	case "release":
		if req.Lease == nil || req.Lease.Key == "" || req.Lease.Token == "" {
			return fail("release needs lease.key and lease.token"), false
		}
		return c.release(id, *req.Lease), false
	case "extend":
		if req.Lease == nil || req.Lease.Key == "" || req.Lease.Token == "" || req.TTLMs <= 0 {
			return fail("extend needs lease.key, lease.token and a positive ttl_ms"), false
		}
		return c.extend(id, *req.Lease, req.TTLMs), false
	case "close":
		return reply{"id": id, "ok": true}, true
	default:
		return fail("unknown op %q", req.Op), false
	}
}

// negotiate: 2 when the worker offers it (protocols), else 1 when init says protocol 1
// (a version-1 worker sends no protocols); 0: nothing this program speaks.
func negotiate(req request) int {
	for _, v := range req.Protocols {
		if v == 2 {
			return 2
		}
	}
	if req.Protocol == 1 {
		return 1
	}
	return 0
}

// refused: a certain failure, with the library's reason (version 1 has no reason).
func (c *client) refused(id int64, reason string) reply {
	if c.version >= 2 {
		return reply{"id": id, "refused": reason}
	}
	return reply{"id": id, "granted": false}
}

// timeoutOption: options.timeout, a duration as a scenario writes it ("50ms").
func timeoutOption(options map[string]any) (time.Duration, error) {
	raw, ok := options["timeout"]
	if !ok {
		return 50 * time.Millisecond, nil // the harness's per-node default for Redlock
	}
	text, ok := raw.(string)
	timeout, err := time.ParseDuration(text)
	if !ok || err != nil || timeout <= 0 {
		return 0, fmt.Errorf("options.timeout must be a positive duration such as \"50ms\", not %v", raw)
	}
	return timeout, nil
}

// init makes one go-redis client (and redsync pool) per node (dial, in the API's file).
func (c *client) init(nodes []node, timeout time.Duration) {
	pools := make([]redis.Pool, 0, len(nodes))
	for _, n := range nodes {
		pool, rc := dial(fmt.Sprintf("%s:%d", n.Host, n.Port), timeout)
		c.clients = append(c.clients, rc)
		pools = append(pools, pool)
	}
	c.rs = redsync.New(pools...)
	c.quorum = len(nodes)/2 + 1
}

func (c *client) mutex(key string, ttlMs int64, extra ...redsync.Option) *redsync.Mutex {
	options := append([]redsync.Option{
		redsync.WithExpiry(time.Duration(ttlMs) * time.Millisecond),
		redsync.WithTries(1),
	}, extra...)
	return c.rs.NewMutex(key, options...)
}

func (c *client) acquire(id int64, key string, ttlMs int64) reply {
	received := time.Now()
	m, token, until, err := c.lock(key, ttlMs)
	if err != nil {
		log.Printf("acquire %s refused: %v", key, err)
		return c.refused(id, err.Error())
	}
	c.held[token] = heldLock{m, key, ttlMs}
	return reply{
		"id": id, "granted": true, "token": token,
		"validity_ms": validityMs(until, received), "fencing": nil,
		"redis_key": key, "value": token,
	}
}

// validityMs: Until() is start + expiry - elapsed - drift, on the monotonic clock; counted
// from when the request was received (before start) and rounded down, never above it.
func validityMs(until, received time.Time) int64 {
	return until.Sub(received).Milliseconds()
}

// heldMutex returns the mutex that acquired the lease (if its expiry is ttlMs, or any
// ttlMs is fine), else one made to act on a lock another mutex took (withValue, in the
// API's file; nil where the API has no way): a token this process released already, an
// extend by another TTL (a mutex's expiry is fixed when it is made).
func (c *client) heldMutex(l lease, ttlMs int64, anyTTL bool) (*redsync.Mutex, int64) {
	h, ok := c.held[l.Token]
	ok = ok && h.key == l.Key
	if ok && (anyTTL || h.ttlMs == ttlMs) {
		return h.m, h.ttlMs
	}
	if m := c.withValue(l, ttlMs); m != nil {
		return m, ttlMs
	}
	if ok { // the API cannot make another: the one that took it, at its own expiry
		return h.m, h.ttlMs
	}
	return nil, 0
}

func (c *client) release(id int64, l lease) reply {
	m, _ := c.heldMutex(l, 1, true) // Unlock does not use the expiry
	if m == nil {
		return reply{"id": id, "released": false} // not this process's, nor can it act on it
	}
	ok, err := m.Unlock()
	delete(c.held, l.Token)
	if ok {
		return reply{"id": id, "released": true}
	}
	if c.unknown(err) {
		return reply{"id": id, "error": fmt.Sprintf("release %s: %v", l.Key, err)}
	}
	log.Printf("release %s: not released: %v", l.Key, err)
	return reply{"id": id, "released": false}
}

func (c *client) extend(id int64, l lease, ttlMs int64) reply {
	received := time.Now()
	m, expiry := c.heldMutex(l, ttlMs, false)
	if m == nil {
		return c.refused(id, "not a lease of this process")
	}
	ok, err := m.Extend()
	if ok {
		c.held[l.Token] = heldLock{m, l.Key, expiry}
		until := extendedUntil(m, received, expiry)
		return reply{"id": id, "granted": true, "validity_ms": validityMs(until, received)}
	}
	if c.unknown(err) {
		return reply{"id": id, "error": fmt.Sprintf("extend %s: %v", l.Key, err)}
	}
	log.Printf("extend %s refused: %v", l.Key, err)
	reason := "extend failed"
	if err != nil {
		reason = err.Error()
	}
	return c.refused(id, reason)
}

func (c *client) close() {
	for _, rc := range c.clients {
		rc.Close()
	}
}

// libraryName reads redsync's version from the build information, so it cannot go stale.
func libraryName() string {
	version := "(unknown version)"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				version = dep.Version
			}
		}
	}
	return "go-redsync/redsync " + version
}
