// A lockharness client (docs/client-protocol.md) that translates the protocol to
// go-redsync/redsync v4 over one go-redis v9 pool per node: Redlock over independent
// masters, exactly as the library does it, with nothing added.
//
// It speaks protocol 2 (and 1, for a worker that offers only 1): a certain failure is
// `refused` with the library's error as the reason (version 1: `granted: false`).
//
// Mapping of redsync's outcomes (redsync's mutex.go, error.go):
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
	"errors"
	"fmt"
	"log"
	"os"
	"runtime/debug"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
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
	clients []*goredislib.Client
	quorum  int
	held    map[string]heldLock // token -> the mutex that acquired (or last extended) it
}

type heldLock struct {
	m     *redsync.Mutex
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

// init makes one go-redis client (and redsync pool) per node. MaxRetries -1: go-redis
// would otherwise retry a command 3 times on a network error, hiding each failure
// behind up to four timeouts; the per-node timeout is the socket timeout.
func (c *client) init(nodes []node, timeout time.Duration) {
	pools := make([]redis.Pool, 0, len(nodes))
	for _, n := range nodes {
		rc := goredislib.NewClient(&goredislib.Options{
			Addr:         fmt.Sprintf("%s:%d", n.Host, n.Port),
			DialTimeout:  timeout,
			ReadTimeout:  timeout,
			WriteTimeout: timeout,
			MaxRetries:   -1,
		})
		c.clients = append(c.clients, rc)
		pools = append(pools, goredis.NewPool(rc))
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
	m := c.mutex(key, ttlMs)
	if err := m.TryLock(); err != nil {
		log.Printf("acquire %s refused: %v", key, err)
		return c.refused(id, err.Error())
	}
	c.held[m.Value()] = heldLock{m, ttlMs}
	return reply{
		"id": id, "granted": true, "token": m.Value(),
		"validity_ms": validityMs(m.Until(), received), "fencing": nil,
		"redis_key": m.Name(), "value": m.Value(),
	}
}

// validityMs: Until() is start + expiry - elapsed - drift, on the monotonic clock; counted
// from when the request was received (before start) and rounded down, never above it.
func validityMs(until, received time.Time) int64 {
	return until.Sub(received).Milliseconds()
}

// heldMutex returns the mutex that acquired the lease (if its expiry is ttlMs, or any
// ttlMs is fine), else the library's own way to act on a lock another mutex took: a
// new mutex carrying the value (WithValue). That covers a token this process released
// already, and an extend by another TTL (a mutex's expiry is fixed when it is made).
func (c *client) heldMutex(l lease, ttlMs int64, anyTTL bool) *redsync.Mutex {
	if h, ok := c.held[l.Token]; ok && h.m.Name() == l.Key && (anyTTL || h.ttlMs == ttlMs) {
		return h.m
	}
	return c.mutex(l.Key, ttlMs, redsync.WithValue(l.Token))
}

func (c *client) release(id int64, l lease) reply {
	m := c.heldMutex(l, 1, true) // Unlock does not use the expiry
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
	m := c.heldMutex(l, ttlMs, false)
	ok, err := m.Extend()
	if ok {
		c.held[l.Token] = heldLock{m, ttlMs}
		return reply{"id": id, "granted": true, "validity_ms": validityMs(m.Until(), received)}
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

// unknown: after a failed Unlock or Extend, could the nodes that did not answer
// (RedisError) have completed a quorum? Every node's outcome is one of: done, expired
// (ErrLockAlreadyExpired), taken (ErrNodeTaken) or failed (RedisError); so done+failed =
// nodes - expired - taken. ErrTaken alone means a quorum was taken: definitely not.
func (c *client) unknown(err error) bool {
	if err == nil || errors.Is(err, redsync.ErrExtendFailed) {
		return false
	}
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		return false
	}
	answeredNo := 0
	for _, e := range flatten(err) {
		var nodeTaken *redsync.ErrNodeTaken
		if errors.Is(e, redsync.ErrLockAlreadyExpired) || errors.As(e, &nodeTaken) {
			answeredNo++
		}
	}
	return len(c.clients)-answeredNo >= c.quorum
}

// flatten undoes errors.Join (redsync joins one error per node).
func flatten(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var all []error
		for _, e := range joined.Unwrap() {
			all = append(all, flatten(e)...)
		}
		return all
	}
	return []error{err}
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
