package registry

import "sync"

// memo runs a function once per key and keeps its result, error included:
// discovery per host, a credentials helper's answer per host. Concurrent
// callers for one key wait for the first.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]*memoEntry[V]
}

type memoEntry[V any] struct {
	once sync.Once
	v    V
	err  error
}

// do returns fn's result for key, running fn only the first time.
func (c *memo[V]) do(key string, fn func() (V, error)) (V, error) {
	e := c.entry(key)
	e.once.Do(func() { e.v, e.err = fn() })
	return e.v, e.err
}

// set fixes key's result, as if fn had returned it.
func (c *memo[V]) set(key string, v V) {
	e := &memoEntry[V]{v: v}
	e.once.Do(func() {})
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*memoEntry[V]{}
	}
	c.m[key] = e
	c.mu.Unlock()
}

func (c *memo[V]) entry(key string) *memoEntry[V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*memoEntry[V]{}
	}
	e := c.m[key]
	if e == nil {
		e = &memoEntry[V]{}
		c.m[key] = e
	}
	return e
}
