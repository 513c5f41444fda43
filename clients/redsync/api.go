//go:build !redsync_v4_0

// The API of redsync v4.12.0 and later, over go-redis v9: TryLock, the mutex's own
// Value and Until, WithValue, and an error per node (errors.Join). Older releases build
// with the tag redsync_v4_0 (api_v4_0.go), as the versions builder does for them.
package main

import (
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

type closer interface{ Close() error }

// dial: MaxRetries -1, as go-redis would otherwise retry a command 3 times on a network
// error, hiding each failure behind up to four timeouts; the per-node timeout is the
// socket timeout.
func dial(addr string, timeout time.Duration) (redis.Pool, closer) {
	rc := goredislib.NewClient(&goredislib.Options{
		Addr:         addr,
		DialTimeout:  timeout,
		ReadTimeout:  timeout,
		WriteTimeout: timeout,
		MaxRetries:   -1,
	})
	return goredis.NewPool(rc), rc
}

// lock: TryLock, and the lease as the library states it.
func (c *client) lock(key string, ttlMs int64) (*redsync.Mutex, string, time.Time, error) {
	m := c.mutex(key, ttlMs)
	if err := m.TryLock(); err != nil {
		return nil, "", time.Time{}, err
	}
	return m, m.Value(), m.Until(), nil
}

// withValue: the library's own way to act on a lock another mutex took.
func (c *client) withValue(l lease, ttlMs int64) *redsync.Mutex {
	return c.mutex(l.Key, ttlMs, redsync.WithValue(l.Token))
}

// extendedUntil: Extend moved the mutex's own Until.
func extendedUntil(m *redsync.Mutex, _ time.Time, _ int64) time.Time {
	return m.Until()
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
