//go:build redsync_v4_0

// The API every redsync v4 release has (v4.0.0 to v4.11.x), over go-redis v8: Lock with
// one try, and no accessor for the mutex's value or validity. So the token is the
// library's own kind (16 random bytes, base64), made here through WithGenValueFunc so
// that it is known; the validity is the library's own rule (the expiry, less the time
// the call took and its drift factor of 1 %, less 2 ms more, as later releases take),
// from the call's start; only the mutex that took a lock can release or extend it.
// A failed call's nodes are not counted apart: any error leaves the outcome unknown.
package main

import (
	"crypto/rand"
	"encoding/base64"
	"time"

	goredislib "github.com/go-redis/redis/v8"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v8"
)

type closer interface{ Close() error }

const driftFactor = 0.01 // redsync's default

// dial: MaxRetries -1 (no retry: each failure seen once), the per-node socket timeout.
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

func (c *client) lock(key string, ttlMs int64) (*redsync.Mutex, string, time.Time, error) {
	var token string
	value := func() (string, error) {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		token = base64.StdEncoding.EncodeToString(b)
		return token, nil
	}
	m := c.mutex(key, ttlMs, redsync.WithGenValueFunc(value))
	start := time.Now()
	if err := m.Lock(); err != nil { // WithTries(1): one try
		return nil, "", time.Time{}, err
	}
	return m, token, until(start, ttlMs), nil
}

func until(start time.Time, ttlMs int64) time.Time {
	expiry := time.Duration(ttlMs) * time.Millisecond
	drift := time.Duration(float64(expiry)*driftFactor) + 2*time.Millisecond
	return start.Add(expiry - drift)
}

// withValue: these releases have no way to act on a lock another mutex took.
func (c *client) withValue(lease, int64) *redsync.Mutex { return nil }

// extendedUntil: the expiry again, from the Extend's start (the library keeps none).
func extendedUntil(_ *redsync.Mutex, start time.Time, ttlMs int64) time.Time {
	return until(start, ttlMs)
}

func (c *client) unknown(err error) bool { return err != nil }
